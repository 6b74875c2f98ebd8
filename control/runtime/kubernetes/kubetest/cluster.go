// Package kubetest runs a real one-node Kubernetes cluster for tests: etcd
// (Debian's etcd-server), the API server, controller manager, scheduler
// and kubelet built from the k8s.io/kubernetes module (tools/kube, cached
// by version), and containerd (Debian's) with a bridge CNI network from
// Debian's containernetworking-plugins, so Pods really run and the host
// reaches each Pod's address. Images come from a root file system tar,
// imported into the node's containerd; nothing is pulled from a registry.
//
// A Cluster owns everything it starts: Stop deletes every Pod, stops the
// processes, removes the containers, network namespaces, mounts and the
// bridge it made, and leaves no process behind.
package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"deckhand/platform/proc"
)

// Version is the Kubernetes release the binaries are built from; it must
// match tools/kube/go.mod.
const Version = "v1.37.2"

// StorageClass is the cluster's class for workspace claims: the
// controller manager's hostPath provisioner (one node only).
const StorageClass = "deckhand-hostpath"

// Namespace is where the tests' containers run.
const Namespace = "deckhand"

// PauseImage is the sandbox image the node uses, made from busybox.
const PauseImage = "deckhand-kubetest/pause:1"

// Cluster is a running one-node cluster.
type Cluster struct {
	Dir        string
	Kubeconfig string
	Config     *rest.Config
	Client     *kubernetes.Clientset
	// PodCIDR is the bridge network's subnet; the host is its first
	// address.
	PodCIDR string
	Bridge  string

	containerdSock string
	procs          []*component
	stopOnce       sync.Once
}

// component is one process of the cluster (etcd, the API server, the kubelet ...).
type component struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// BinDir is where the Kubernetes binaries are cached.
func BinDir() string {
	if d := os.Getenv("DECKHAND_KUBE_BIN"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "deckhand", "kube", Version)
}

var binaries = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"}

// Build builds the Kubernetes binaries from tools/kube (repo is the
// repository root) into BinDir unless they are there already. It takes
// about 23 CPU-minutes the first time.
func Build(repo string) error {
	dir := BinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err == nil {
			continue
		}
		tmp := filepath.Join(dir, "."+b+".tmp")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", tmp, "k8s.io/kubernetes/cmd/"+b)
		cmd.Dir = filepath.Join(repo, "tools", "kube")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s from tools/kube: %v\n%s", b, err, out)
		}
		if err := os.Rename(tmp, filepath.Join(dir, b)); err != nil {
			return err
		}
	}
	return nil
}

// Start starts a cluster in a new directory. subnet is the third octet
// of the Pod network 10.244.<subnet>.0/24, so two clusters never share
// one.
func Start(ctx context.Context, subnet int) (_ *Cluster, err error) {
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			return nil, fmt.Errorf("kubetest: %s not built (make kube builds it into %s): %w", b, BinDir(), err)
		}
	}
	for _, b := range []string{"etcd", "containerd", "/usr/lib/cni/bridge"} {
		if _, err := exec.LookPath(b); err != nil {
			return nil, fmt.Errorf("kubetest: %s missing (scripts/setup.sh installs etcd-server, containerd and containernetworking-plugins): %w", b, err)
		}
	}
	// Socket paths stay under the 108-byte limit.
	dir, err := os.MkdirTemp("/tmp", "dhk-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, PodCIDR: fmt.Sprintf("10.244.%d.0/24", subnet), Bridge: fmt.Sprintf("dhk%d", subnet),
		containerdSock: filepath.Join(dir, "containerd.sock")}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	pki, err := makePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	etcdClient, etcdPeer, apiPort, kubeletPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, server, pki); err != nil {
		return nil, err
	}

	if err := c.start(ctx, "etcd", "etcd", "--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", url(etcdClient), "--advertise-client-urls", url(etcdClient),
		"--listen-peer-urls", url(etcdPeer), "--initial-advertise-peer-urls", url(etcdPeer),
		"--initial-cluster", "default="+url(etcdPeer), "--log-level", "warn"); err != nil {
		return nil, err
	}
	if err := c.start(ctx, "kube-apiserver", filepath.Join(BinDir(), "kube-apiserver"),
		"--etcd-servers", url(etcdClient), "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--tls-cert-file", pki.file("apiserver.crt"), "--tls-private-key-file", pki.file("apiserver.key"),
		"--client-ca-file", pki.file("ca.crt"),
		// exec (a workspace copy) reaches the kubelet as the admin, at
		// the node's IP (its name resolves nowhere).
		"--kubelet-client-certificate", pki.file("admin.crt"), "--kubelet-client-key", pki.file("admin.key"),
		"--kubelet-preferred-address-types", "InternalIP",
		"--service-account-key-file", pki.file("sa.key"), "--service-account-signing-key-file", pki.file("sa.key"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--authorization-mode", "RBAC", "--allow-privileged=false", "--profiling=false",
		"--enable-priority-and-fairness=false", "--v", "0"); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	c.Config = cfg
	if c.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "the API server", func(ctx context.Context) error {
		_, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	if err := c.start(ctx, "kube-controller-manager", filepath.Join(BinDir(), "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(kcmPort),
		"--service-account-private-key-file", pki.file("sa.key"), "--root-ca-file", pki.file("ca.crt"),
		"--use-service-account-credentials=false", "--enable-hostpath-provisioner=true",
		"--controllers", "*,-node-ipam-controller"); err != nil {
		return nil, err
	}
	if err := c.start(ctx, "kube-scheduler", filepath.Join(BinDir(), "kube-scheduler"),
		"--kubeconfig", c.Kubeconfig, "--authentication-kubeconfig", c.Kubeconfig, "--authorization-kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(schedPort)); err != nil {
		return nil, err
	}

	// The node: containerd with the bridge network, then the kubelet.
	if err := c.writeContainerd(); err != nil {
		return nil, err
	}
	if err := c.start(ctx, "containerd", "containerd", "--config", filepath.Join(dir, "containerd.toml")); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "containerd", func(ctx context.Context) error {
		cli, err := c.containerd()
		if err != nil {
			return err
		}
		defer cli.Close()
		_, err = cli.Version(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	pause, err := pauseRootfs()
	if err != nil {
		return nil, err
	}
	if err := c.ImportImage(ctx, PauseImage, pause, []string{"/bin/busybox", "sleep", "2147483647"}); err != nil {
		return nil, err
	}
	node := "dhk-" + strconv.Itoa(subnet)
	// The node's IP is the Pod bridge's gateway, made before the kubelet
	// so it has an address that is not loopback (the kubelet sets no
	// node address otherwise, and the API server then reaches no
	// kubelet for exec); the bridge plugin takes the bridge as it finds
	// it, and Stop deletes it.
	nodeIP := strings.TrimSuffix(c.PodCIDR, "0/24") + "1"
	if err := c.bridgeUp(nodeIP); err != nil {
		return nil, err
	}
	if err := c.writeKubelet(nodeIP, kubeletPort, pki.file("ca.crt")); err != nil {
		return nil, err
	}
	if err := c.start(ctx, "kubelet", filepath.Join(BinDir(), "kubelet"),
		"--config", filepath.Join(dir, "kubelet.yaml"), "--kubeconfig", c.Kubeconfig,
		"--root-dir", filepath.Join(dir, "kubelet"), "--cert-dir", filepath.Join(dir, "kubelet-pki"),
		"--hostname-override", node, "--node-ip", nodeIP, "--v", "0"); err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, "the node to be ready", func(ctx context.Context) error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not ready")
	}); err != nil {
		return nil, err
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	del := corev1.PersistentVolumeReclaimDelete
	if _, err := c.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:    metav1.ObjectMeta{Name: StorageClass},
		Provisioner:   "kubernetes.io/host-path",
		ReclaimPolicy: &del,
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	// Pods are admitted once the namespace's default service account
	// exists (the controller manager makes it).
	if err := c.waitFor(ctx, "the default service account", func(ctx context.Context) error {
		_, err := c.Client.CoreV1().ServiceAccounts(Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func url(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// start runs one of the cluster's processes, its output in a log file.
func (c *Cluster) start(_ context.Context, name, bin string, args ...string) error {
	f, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("kubetest: start %s: %w", name, err)
	}
	p := &component{name: name, cmd: cmd, log: f, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return nil
}

// Log answers the tail of a process's log, for a failure message.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

func (c *Cluster) waitFor(ctx context.Context, what string, ok func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	for {
		for _, p := range c.procs {
			select {
			case <-p.done:
				return fmt.Errorf("kubetest: %s exited while waiting for %s:\n%s", p.name, what, c.Log(p.name))
			default:
			}
		}
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = ok(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			logs := ""
			for _, p := range c.procs {
				logs += "\n--- " + p.name + "\n" + c.Log(p.name)
			}
			return fmt.Errorf("kubetest: waiting for %s: %v%s", what, last, logs)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) writeContainerd() error {
	cni := filepath.Join(c.Dir, "cni")
	if err := os.MkdirAll(cni, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "deckhand-kubetest",
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]]}}
  ]
}`, c.Bridge, filepath.Join(c.Dir, "ipam"), c.PodCIDR)
	if err := os.WriteFile(filepath.Join(cni, "10-deckhand.conflist"), []byte(conf), 0o644); err != nil {
		return err
	}
	toml := fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = %q
[ttrpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
`, filepath.Join(c.Dir, "containerd", "root"), filepath.Join(c.Dir, "containerd", "state"), c.containerdSock,
		c.containerdSock+".ttrpc", "docker.io/"+PauseImage, cni)
	return os.WriteFile(filepath.Join(c.Dir, "containerd.toml"), []byte(toml), 0o644)
}

// bridgeUp makes the Pod bridge with the gateway address gw (a bridge
// a killed run left is taken as it is).
func (c *Cluster) bridgeUp(gw string) error {
	if exec.Command("ip", "link", "show", c.Bridge).Run() != nil {
		if out, err := exec.Command("ip", "link", "add", "name", c.Bridge, "type", "bridge").CombinedOutput(); err != nil {
			return fmt.Errorf("kubetest: bridge %s: %v: %s", c.Bridge, err, out)
		}
	}
	for _, args := range [][]string{{"addr", "replace", gw + "/24", "dev", c.Bridge}, {"link", "set", c.Bridge, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubetest: bridge %s: ip %v: %v: %s", c.Bridge, args, err, out)
		}
	}
	return nil
}

func (c *Cluster) writeKubelet(address string, port int, clientCA string) error {
	y := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
staticPodPath: ""
resolvConf: /etc/resolv.conf
clusterDomain: cluster.local
serializeImagePulls: false
nodeStatusUpdateFrequency: 2s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "1Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
`, address, port, clientCA, c.containerdSock)
	return os.WriteFile(filepath.Join(c.Dir, "kubelet.yaml"), []byte(y), 0o644)
}

// ImportImage makes an image named ref from a root file system tar with
// entrypoint and imports it into the node's containerd (as a Docker
// archive, the format `docker save` writes and `ctr images import`
// reads).
func (c *Cluster) ImportImage(ctx context.Context, ref string, rootfs []byte, entrypoint []string) error {
	archive, err := dockerArchive(ref, rootfs, entrypoint)
	if err != nil {
		return err
	}
	cli, err := c.containerd()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx = namespaces.WithNamespace(ctx, "k8s.io")
	imgs, err := cli.Import(ctx, bytes.NewReader(archive))
	if err != nil {
		return fmt.Errorf("kubetest: import %s: %w", ref, err)
	}
	// The kubelet runs what is unpacked into the CRI's snapshotter.
	for _, img := range imgs {
		if err := containerd.NewImage(cli, img).Unpack(ctx, "overlayfs"); err != nil {
			return fmt.Errorf("kubetest: unpack %s: %w", img.Name, err)
		}
	}
	return nil
}

// containerd is a client of the node's containerd.
func (c *Cluster) containerd() (*containerd.Client, error) {
	return containerd.New(c.containerdSock)
}

// RemoveImage removes an image ImportImage made.
func (c *Cluster) RemoveImage(ctx context.Context, ref string) error {
	cli, err := c.containerd()
	if err != nil {
		return err
	}
	defer cli.Close()
	err = cli.ImageService().Delete(namespaces.WithNamespace(ctx, "k8s.io"), "docker.io/"+ref)
	if err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("kubetest: remove %s: %w", ref, err)
	}
	return nil
}

// Stop deletes every Pod, stops the processes and removes what the node
// made: containers, network namespaces, mounts, the bridge, the files.
func (c *Cluster) Stop() {
	c.stopOnce.Do(c.stop)
}

func (c *Cluster) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if c.Client != nil && c.running("kubelet") {
		// The kubelet stops each Pod's sandbox (its network torn down)
		// when the Pod goes.
		nss, _ := c.Client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if nss != nil {
			zero := int64(0)
			for _, ns := range nss.Items {
				_ = c.Client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
			}
		}
		_ = c.waitFor(ctx, "every Pod to go", func(ctx context.Context) error {
			pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(pods.Items) > 0 {
				return fmt.Errorf("%d pods left", len(pods.Items))
			}
			return nil
		})
	}
	// The kubelet first, so it restarts nothing; containerd's containers
	// are then killed and removed through it.
	c.kill("kubelet")
	if c.running("containerd") {
		c.removeContainers(ctx)
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.kill(c.procs[i].name)
	}
	c.killShims()
	unmountUnder(c.Dir)
	// The kubelet did not stop every sandbox (it was stopped first, or a
	// Pod deleted with no grace left the API before its sandbox's network
	// was torn down): their namespaces stay.
	c.removeNetns()
	if c.Bridge != "" {
		_ = exec.Command("ip", "link", "del", c.Bridge).Run()
	}
	_ = os.RemoveAll(c.Dir)
}

func (c *Cluster) running(name string) bool {
	for _, p := range c.procs {
		if p.name == name {
			select {
			case <-p.done:
				return false
			default:
				return true
			}
		}
	}
	return false
}

func (c *Cluster) kill(name string) {
	for _, p := range c.procs {
		if p.name != name {
			continue
		}
		proc.StopTree(p.cmd.Process.Pid, syscall.SIGTERM, 10*time.Second, p.done)
		p.log.Close()
	}
}

// removeContainers kills and removes every container and sandbox the
// node's containerd still holds.
func (c *Cluster) removeContainers(ctx context.Context) {
	cli, err := c.containerd()
	if err != nil {
		return
	}
	defer cli.Close()
	ctx = namespaces.WithNamespace(ctx, "k8s.io")
	ctrs, err := cli.Containers(ctx)
	if err != nil {
		return
	}
	for _, ct := range ctrs {
		if task, err := ct.Task(ctx, nil); err == nil {
			_, _ = task.Delete(ctx, containerd.WithProcessKill)
		}
		_ = ct.Delete(ctx)
	}
}

// killShims ends the runc shims this cluster's containerd started (they
// outlive containerd by design).
func (c *Cluster) killShims() {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(cmdline, []byte("containerd-shim")) && bytes.Contains(cmdline, []byte(c.containerdSock)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// unmountUnder unmounts every mount below dir, deepest first.
func unmountUnder(dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) > 4 && strings.HasPrefix(fs[4], dir+"/") {
			points = append(points, fs[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// removeNetns removes the network namespaces containerd's CRI made for
// this cluster's Pods (/var/run/netns/cni-* with an address in the Pod
// network), once nothing of the cluster runs; another engine's are left
// alone.
func (c *Cluster) removeNetns() {
	ours := "inet " + strings.TrimSuffix(c.PodCIDR, "0/24")
	ents, _ := os.ReadDir("/var/run/netns")
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "cni-") {
			continue
		}
		if out, err := exec.Command("ip", "-n", e.Name(), "-4", "-o", "addr", "show").Output(); err != nil || !strings.Contains(string(out), ours) {
			continue
		}
		p := filepath.Join("/var/run/netns", e.Name())
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
		_ = os.Remove(p)
	}
}
