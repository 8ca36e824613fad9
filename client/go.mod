module github.com/temco/temco/client

go 1.26.0
