package events

// Event kinds (event_type) of docs/spec/interface.md "Events". Domains use these
// constants; Append accepts other well-formed kinds too (a domain may
// record actions the table does not name), but ingest accepts only the
// kinds of Ingestible.
const (
	ContainerCreating = "container.creating"
	ContainerRunning  = "container.running"
	ContainerStopped  = "container.stopped"
	ContainerFailed   = "container.failed"
	ContainerDeleting = "container.deleting"

	ContainerAutostartEnabled  = "container.autostart_enabled"
	ContainerAutostartDisabled = "container.autostart_disabled"
	ContainerRenamed           = "container.renamed"
	ContainerResourceUpdated   = "container.resource_updated"
	ContainerSSHKeyAdded       = "container.ssh_key.added"
	ContainerSSHKeyRemoved     = "container.ssh_key.removed"
	ContainerDisplayEnabled    = "container.display.enabled"

	SnapshotCreated  = "container.snapshot.created"
	SnapshotDeleted  = "container.snapshot.deleted"
	SnapshotRestored = "container.snapshot.restored"
	SnapshotRenamed  = "container.snapshot.renamed"

	AuthTokenDeleted  = "auth.token.deleted"
	AuthTokenUpdated  = "auth.token.updated"
	AuthTokenEnabled  = "auth.token.enabled"
	AuthTokenDisabled = "auth.token.disabled"

	UserCreated     = "user.created"
	UserBanned      = "user.banned"
	UserUnbanned    = "user.unbanned"
	UserRoleChanged = "user.role_changed"

	ProxyAliasExpiringSoon = "proxy.alias.expiring_soon"
	ProxyAliasExpired      = "proxy.alias.expired"

	ProxyPermissionsDefaultChanged = "proxy.permissions.default_changed"
	ProxyPermissionsGroupAdded     = "proxy.permissions.group_added"
	ProxyPermissionsGroupUpdated   = "proxy.permissions.group_updated"
	ProxyPermissionsGroupRemoved   = "proxy.permissions.group_removed"

	FirewallRuleAdded    = "firewall.rule.added"
	FirewallRuleRemoved  = "firewall.rule.removed"
	FirewallRuleUpdated  = "firewall.rule.updated"
	FirewallRuleEnabled  = "firewall.rule.enabled"
	FirewallRuleDisabled = "firewall.rule.disabled"

	PoolMemberJoined      = "pool.member.joined"
	PoolMemberLeft        = "pool.member.left"
	PoolMemberRoleChanged = "pool.member.role_changed"
	PoolInvited           = "pool.invited"
	PoolInvitationRevoked = "pool.invitation_revoked"

	StorageShareMountChanged = "storage.share.mount_changed"
	NotificationRead         = "notification.read"
	ServerHealthChanged      = "server.health_changed"
	ServerRentalExpiring     = "server.rental_expiring"
	ActivityLogged           = "activity.logged"
)

// Resource types (resource_type) of docs/spec/interface.md "Events".
const (
	ResContainer        = "container"
	ResStorageShare     = "storage_share"
	ResNotification     = "notification"
	ResProject          = "project"
	ResServer           = "server"
	ResFirewall         = "firewall"
	ResProxyAlias       = "proxy_alias"
	ResProxyPermissions = "proxy_permissions"
	ResAuthToken        = "auth_token"
	ResPool             = "pool"
	ResUser             = "user"
	ResActivityLog      = "activity_log"
)

// Kinds is every kind of the Events table, in the table's order.
var Kinds = []string{
	ContainerCreating, ContainerRunning, ContainerStopped, ContainerFailed, ContainerDeleting,
	ContainerAutostartEnabled, ContainerAutostartDisabled, ContainerRenamed, ContainerResourceUpdated,
	ContainerSSHKeyAdded, ContainerSSHKeyRemoved, ContainerDisplayEnabled,
	SnapshotCreated, SnapshotDeleted, SnapshotRestored, SnapshotRenamed,
	AuthTokenDeleted, AuthTokenUpdated, AuthTokenEnabled, AuthTokenDisabled,
	UserCreated, UserBanned, UserUnbanned, UserRoleChanged,
	ProxyAliasExpiringSoon, ProxyAliasExpired,
	ProxyPermissionsDefaultChanged, ProxyPermissionsGroupAdded, ProxyPermissionsGroupUpdated, ProxyPermissionsGroupRemoved,
	FirewallRuleAdded, FirewallRuleRemoved, FirewallRuleUpdated, FirewallRuleEnabled, FirewallRuleDisabled,
	PoolMemberJoined, PoolMemberLeft, PoolMemberRoleChanged, PoolInvited, PoolInvitationRevoked,
	StorageShareMountChanged, NotificationRead, ServerHealthChanged, ServerRentalExpiring, ActivityLogged,
}

// Ingestible maps the kinds that producers outside the control plane
// (agents, and admins on their behalf) may report — container lifecycle,
// snapshots, firewall, pools and storage — to their resource type.
var Ingestible = map[string]string{
	ContainerCreating: ResContainer, ContainerRunning: ResContainer, ContainerStopped: ResContainer,
	ContainerFailed: ResContainer, ContainerDeleting: ResContainer,
	SnapshotCreated: ResContainer, SnapshotDeleted: ResContainer, SnapshotRestored: ResContainer, SnapshotRenamed: ResContainer,
	FirewallRuleAdded: ResFirewall, FirewallRuleRemoved: ResFirewall, FirewallRuleUpdated: ResFirewall,
	FirewallRuleEnabled: ResFirewall, FirewallRuleDisabled: ResFirewall,
	PoolMemberJoined: ResPool, PoolMemberLeft: ResPool, PoolMemberRoleChanged: ResPool, PoolInvited: ResPool,
	PoolInvitationRevoked:    ResPool,
	StorageShareMountChanged: ResStorageShare,
}
