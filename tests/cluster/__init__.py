"""A real local Kubernetes control plane for tests and the demo.

etcd, kube-apiserver, kube-controller-manager and kube-scheduler (built from the
``k8s.io/kubernetes`` Go module), Kueue, the KubeRay operator and KWOK fake nodes, all as local
processes on 127.0.0.1. ``python -m tests.cluster up|down|status`` drives it.
"""
