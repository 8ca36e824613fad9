// FerretDB cannot be built as a dependency: its build/version package embeds a
// version.txt that only its own release process writes. tools/build.sh copies
// the module source pinned here, writes that file and builds it in place.
module temco/tools/ferretdb

go 1.26

require github.com/FerretDB/FerretDB v1.24.0
