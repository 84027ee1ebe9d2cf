package cluster

import (
	"fmt"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// etcdProvider is protoactor's etcd provider over opt.Etcd: members
// register under /cuzk/<cluster name> with a lease etcd keeps while they
// live.
func etcdProvider(opt Options) (pcluster.ClusterProvider, error) {
	p, err := etcd.NewWithConfig("/cuzk/"+opt.Name, clientv3.Config{Endpoints: opt.Etcd, DialTimeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("cluster: etcd %v: %w", opt.Etcd, err)
	}
	return p, nil
}
