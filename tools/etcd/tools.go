//go:build tools

// Package tools pins etcd, the store of each local cluster.
package tools

import _ "go.etcd.io/etcd/server/v3"
