// Package runtime is the seam between the control plane and the engines
// that run containers (the Docker Engine, Podman's compatible socket,
// Kubernetes). It owns no state: the store holds what a user asked for,
// the engine holds what runs, and the container lifecycle in
// control/projects moves the record by what a Driver reports.
//
// Drivers are stateless and idempotent by container id: every engine
// object they make carries the labels below, so a create repeated after a
// crash finds what the first one made, and a delete leaves nothing.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"
)

// Labels every engine object of a container carries. A driver never
// touches an object whose installation label is not its own, so two
// control planes (or two test suites) can share one engine.
const (
	LabelContainer    = "deckhand.container"
	LabelProject      = "deckhand.project"
	LabelInstallation = "deckhand.installation"
	// LabelSnapshot is on a snapshot's image: the snapshot's id.
	LabelSnapshot = "deckhand.snapshot"
	// LabelPool is on a container made for the warm pool of a catalog
	// image (the image's id); it stays after the container is claimed,
	// since an engine's labels are fixed when it makes the object.
	LabelPool = "deckhand.pool"
)

// Labels are the labels of container id's engine objects in
// installation, with its project's when project is not empty.
func Labels(installation, id, project string) map[string]string {
	l := map[string]string{LabelInstallation: installation, LabelContainer: id}
	if project != "" {
		l[LabelProject] = project
	}
	return l
}

// Defaults of every driver's agent options.
const (
	// DefaultGatewayPort is the agent gateway's port inside a container.
	DefaultGatewayPort = 7700
	// DefaultHome is where the workspace is mounted: the image user's home.
	DefaultHome = "/home/user"
)

// AgentOptions fills a driver's gateway port and home when they are zero
// and checks them; driver names the driver in the errors.
func AgentOptions(driver string, port *int, home *string) error {
	if *port == 0 {
		*port = DefaultGatewayPort
	}
	if *port < 1 || *port > 65535 {
		return fmt.Errorf("%s runtime: gateway port %d: must be 1-65535", driver, *port)
	}
	if *home == "" {
		*home = DefaultHome
	}
	if !path.IsAbs(*home) || path.Clean(*home) == "/" {
		return fmt.Errorf("%s runtime: home %q: must be an absolute path below /", driver, *home)
	}
	return nil
}

// State is what the engine says of a container.
type State string

// The engine-side states a driver reports.
const (
	StateMissing State = "missing" // the engine holds nothing for the id
	StateCreated State = "created" // made, never started or stopped since
	StateRunning State = "running"
	StatePaused  State = "paused"
	StateExited  State = "exited" // stopped, by a user or because it ended
	StateDead    State = "dead"   // the engine could not run or remove it
)

// Resources are a container's limits; zero means the engine's default.
type Resources struct {
	CPUs     float64
	MemoryMB int64
}

// Spec is everything a driver needs to make a container. It is complete:
// a driver keeps nothing between calls.
type Spec struct {
	ID        string // the container record's id
	ProjectID string
	Name      string
	// Image is the engine's reference (the catalog entry's image_name).
	Image     string
	Resources Resources
	// Autostart maps to the engine's restart policy.
	Autostart bool
	// Env is the user's environment for programs; it never carries the
	// agent's credentials.
	Env map[string]string
	// Files are written into the container before it starts, readable by
	// root only (mode 0400): the agent token travels this way, never in
	// the engine's environment or labels.
	Files []File
	// Args are the agent's command-line arguments (the image's entrypoint
	// is the agent).
	Args []string
	// Pool is the catalog image whose warm pool the container is made
	// for (LabelPool); empty for a container made for a project.
	Pool string
	// Workspace is the id of the workspace mounted as the user's home: a
	// workspace kept when its container was deleted (it keeps that
	// container's id); empty: the container's own. A workspace volume
	// made empty for a spec whose Image holds files at the home (a
	// snapshot's) starts with them.
	Workspace string
}

// File is a file placed in the container at create.
type File struct {
	Path    string
	Content []byte
	Mode    uint32
}

// Status is what Inspect answers.
type Status struct {
	State State
	// Reason is the engine's own words when it failed (an exit code, an
	// OOM kill, a missing image), for the record's status_reason.
	Reason string
	// Addr is where the control plane reaches the agent's gateway
	// (host:port on the engine's network); empty when not running.
	Addr      string
	StartedAt time.Time
}

// Event is a change the engine reports for a container of this
// installation.
type Event struct {
	ContainerID string
	State       State
	Reason      string
}

// Snapshot is a snapshot's image in the engine.
type Snapshot struct {
	// Image is the engine's reference of the snapshot's image.
	Image string
	// SizeBytes is the image's size.
	SizeBytes int64
}

// Capabilities say what a driver can do, so the API refuses early.
type Capabilities struct {
	Pause     bool
	Snapshots bool
	// Name is the driver's name as --runtime takes it.
	Name string
}

// Driver is one engine. Every method is idempotent by container id: a
// create of an existing container, a stop of a stopped one and a delete
// of a missing one succeed.
type Driver interface {
	Capabilities() Capabilities
	Create(ctx context.Context, spec Spec) error
	Start(ctx context.Context, id string) error
	// Stop asks the agent to stop and kills it after timeout.
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Restart(ctx context.Context, id string, timeout time.Duration) error
	Pause(ctx context.Context, id string) error
	Resume(ctx context.Context, id string) error
	// Delete removes the container and, unless keepWorkspace, its
	// workspace volume.
	Delete(ctx context.Context, id string, keepWorkspace bool) error
	Inspect(ctx context.Context, id string) (Status, error)
	// List answers every container id of this installation with its
	// state, for the reconciler.
	List(ctx context.Context) (map[string]Status, error)
	// Watch sends engine changes until ctx ends; a reconciler still
	// lists on start and after the channel closes.
	Watch(ctx context.Context) (<-chan Event, error)
	// ImageExists says whether the engine holds the image reference.
	ImageExists(ctx context.Context, image string) (bool, error)
	// Snapshot commits container id's filesystem and its workspace into
	// an image labelled with snap (the snapshot's id); the container is
	// frozen meanwhile, so both are of one moment, and goes on as it was.
	// A Spec whose Image is the answer's Image makes a container of that
	// state (its workspace from the snapshot when the volume is new).
	Snapshot(ctx context.Context, id, snap string) (Snapshot, error)
	// DeleteSnapshot removes snapshot snap's image; a missing one
	// succeeds.
	DeleteSnapshot(ctx context.Context, snap string) error
	Close() error
}

// FileWriter is a driver that writes files into a container it made,
// running or paused, as Create wrote Spec.Files: the warm pool's claim
// gives a pooled container its own agent token this way.
type FileWriter interface {
	WriteFiles(ctx context.Context, id string, files []File) error
}

// Errors a driver answers, so callers map them once.
var (
	// ErrUnavailable: the engine could not be reached.
	ErrUnavailable = errors.New("runtime: engine unreachable")
	// ErrImageMissing: the engine has no such image.
	ErrImageMissing = errors.New("runtime: image not found in the engine")
	// ErrNotFound: the engine holds no container of the id (Start, Stop,
	// Restart, Pause and Resume; Delete of a missing one succeeds).
	ErrNotFound = errors.New("runtime: no such container in the engine")
	// ErrInUse: a snapshot's image is what a container runs.
	ErrInUse = errors.New("runtime: the image is in use by a container")
	// ErrNotSupported: the driver cannot do this (see Capabilities).
	ErrNotSupported = errors.New("runtime: not supported by this driver")
)
