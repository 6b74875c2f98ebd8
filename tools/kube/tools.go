//go:build tools

// Package kube pins the Kubernetes release whose binaries (API server,
// controller manager, scheduler, kubelet) the cluster tests build and run
// (control/runtime/kubernetes/kubetest builds them into a cache).
package kube

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
