// Command etcd runs the etcd server from its Go module (Debian ships only etcd 3.4).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
