package projects

import (
	"net/http"
	"strings"

	"deckhand/platform"
	"deckhand/platform/proxyperm"
)

// Routes is the domain's route table.
func (s *Service) Routes() []platform.Route {
	member := s.env.Authz.Policy(CheckProjectMember, "the project's owner or a user its permissions name")
	manager := s.env.Authz.Policy(CheckProjectManager, "the project's owner or a user with role manager on it")
	owner := s.env.Authz.Policy(CheckProjectOwner, "the project's owner")
	read := s.env.Authz.Policy(CheckContainerRead, "a member (owner or any permission) of the container's project")
	act := s.env.Authz.Policy(CheckContainerAccess, "the owner, an operator or a manager of the container's project")
	manage := s.env.Authz.Policy(CheckContainerManage, "an admin, or the owner or a manager of the container's project")
	claim := agentOnly(s.env.Authz.Policy(CheckContainerClaim, "the container's own agent token (agt_), an admin, or the owner or a manager "+
		"of the container's project"))
	operate := s.env.Authz.Policy(CheckContainerOperate, "an admin, or the owner, an operator or a manager of the container's project")
	agent := s.agentPolicy()
	projects, admin, containers := []string{"projects"}, []string{"admin"}, []string{"containers"}
	network, tokens := []string{"container network"}, []string{"container agent tokens"}
	roles := "Roles: `viewer` reads the project, its containers and documents; `operator` also acts on its containers " +
		"(network, proxy permissions); `manager` also changes the project, its permissions and its project-level document. " +
		"The owner holds every right and cannot be named in a permission."
	netErrs := " 400 for a malformed container id; 404 for an unknown container; 403 when the caller may not act on it (checked before " +
		"anything about the configuration is read, so others learn nothing of it)."
	actErrs := " 400 for a malformed id, 404 for an unknown container, 403 when the caller may not act on it (a viewer)."
	tokenErrs := " 400 for a malformed container id; 404 for an unknown container; 403 when the caller may not manage it."
	routes := []platform.Route{
		// Projects.
		{Method: http.MethodPost, Path: "/api/v1/projects", OperationID: "createProject", Policy: platform.SignedIn, Tags: projects, Status: http.StatusCreated,
			Summary: "Create a project owned by the caller", Description: "Writes `project.created`.",
			Message: "Project created", Op: platform.Op(s.CreateProject)},
		{Method: http.MethodGet, Path: "/api/v1/projects", OperationID: "listProjects", Policy: platform.SignedIn, Tags: projects,
			Summary: "Projects the caller owns or is permitted on, oldest first", Message: "Projects", Op: platform.Op(s.ListProjects)},
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}", OperationID: "getProject", Policy: member, Tags: projects, Summary: "One project",
			Description: "400 for a malformed id, 404 for an unknown project, 403 when the caller is neither owner nor permitted.",
			Message:     "Project", Op: platform.Op(s.GetProject)},
		{Method: http.MethodPut, Path: "/api/v1/projects/{id}", OperationID: "replaceProject", Policy: manager, Tags: projects,
			Summary:     "Replace a project's name and description",
			Description: "`name` is required; an absent `description` becomes empty. Writes `project.updated`.",
			Message:     "Project updated", Op: platform.Op(s.ReplaceProject)},
		{Method: http.MethodPatch, Path: "/api/v1/projects/{id}", OperationID: "updateProject", Policy: manager, Tags: projects,
			Summary:     "Change a project's name or description",
			Description: "Give `name`, `description` or both. Writes `project.updated`.",
			Message:     "Project updated", Op: platform.Op(s.ChangeProject)},
		{Method: http.MethodDelete, Path: "/api/v1/projects/{id}", OperationID: "deleteProject", Policy: owner, Tags: projects,
			Summary:     "Delete a project (owner only)",
			Description: "409 while the project has containers. Removes its permissions and its proxy permissions document. Writes `project.deleted`.",
			Message:     "Project deleted", Op: platform.CommandOp(s.DeleteProject)},
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}/stats", OperationID: "getProjectStats", Policy: member, Tags: projects,
			Summary: "Counts of a project's containers, people and configuration", Message: "Project stats", Op: platform.Op(s.ProjectStats)},
		{Method: http.MethodPost, Path: "/api/v1/admin/projects", OperationID: "adminCreateProject", Policy: platform.Admin, Tags: admin, Status: http.StatusCreated,
			Summary:     "Create a project for a user (admin role required)",
			Description: "`owner_id` must name an existing account (400 otherwise). Writes `project.created`.",
			Message:     "Project created", Op: platform.Op(s.AdminCreateProject)},

		// Permissions.
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}/permissions", OperationID: "listProjectPermissions", Policy: member, Tags: projects,
			Summary: "The project's permissions, oldest first", Description: roles, Message: "Permissions", Op: platform.Op(s.ListPermissions)},
		{Method: http.MethodPost, Path: "/api/v1/projects/{id}/permissions", OperationID: "grantProjectPermission", Policy: manager, Tags: projects,
			Status: http.StatusCreated, Summary: "Grant a user a role on the project",
			Description: roles + " The user is named by `user_id` or by `email` (one of them; any spelling of the address). " +
				"400 when `user_id` or `email` names no account, or names the owner; " +
				"409 when the user already has a permission (change it with PUT or PATCH). Writes `project.permission.granted`.",
			Message: "Permission granted", Op: platform.Op(s.Grant)},
		{Method: http.MethodPut, Path: "/api/v1/projects/{id}/permissions/{permissionId}", OperationID: "setProjectPermissionRole", Policy: manager, Tags: projects,
			Summary: "Set a permission's role", Description: roles + " Writes `project.permission.updated`.",
			Message: "Permission updated", Op: platform.Op(s.SetRole)},
		{Method: http.MethodPatch, Path: "/api/v1/projects/{id}/permissions/{permissionId}", OperationID: "updateProjectPermission", Policy: manager, Tags: projects,
			Summary:     "Change a permission's role",
			Description: roles + " Same as PUT: `role` is the only field. Writes `project.permission.updated`.",
			Message:     "Permission updated", Op: platform.Op(s.SetRole)},
		{Method: http.MethodDelete, Path: "/api/v1/projects/{id}/permissions/{permissionId}", OperationID: "revokeProjectPermission", Policy: manager, Tags: projects,
			Summary: "Revoke a permission", Description: "Writes `project.permission.revoked`.",
			Message: "Permission revoked", Op: platform.CommandOp(s.Revoke)},

		// Containers.
		{Method: http.MethodPost, Path: "/api/v1/admin/containers", OperationID: "adminCreateContainer", Policy: platform.Admin, Tags: admin, Status: http.StatusCreated,
			Summary: "Register a container in a project (admin role required)",
			Description: "`project_id` must name a project (400 otherwise); `id` (optional, 1-40 lowercase letters or digits, no '-' because " +
				"service host names join ids with '-') defaults to a random one, 409 when taken; `server_id` is recorded as given. " +
				"The container starts in status `creating`. Writes `container.creating`.",
			Message: "Container created", Op: platform.Op(s.AdminCreateContainer)},
		{Method: http.MethodGet, Path: "/api/v1/projects/{id}/containers", OperationID: "listProjectContainers", Policy: member, Tags: containers,
			Summary: "The project's containers, oldest first",
			Description: "Not in the interface's route list; added so members can find the containers they may act on. " +
				"`page` from 1, `limit` 1-100 (default 20; larger is refused with 400).",
			Message: "Containers", Op: platform.Op(s.ListContainers)},
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}", OperationID: "getContainer", Policy: read, Tags: containers,
			Summary: "One container",
			Description: "The record with `status` and `status_reason`, `runtime` (the engine that runs it: docker, or none when this control " +
				"plane keeps records only), `urls` (service → `https://<project>-<container>-<service>-1.<server_name>.<container_domain>`), " +
				"`agent_addr` (where the control plane reaches the agent's gateway while running) and `enrolled_at`. " +
				"400 for a malformed id, 404 for an unknown container, 403 when the caller is no member of its project.",
			Message: "Container", Op: platform.Op(s.GetContainer)},
		{Method: http.MethodGet, Path: "/api/v1/containers", OperationID: "listContainers", Policy: platform.SignedIn, Tags: containers,
			Summary: "A project's containers, oldest first (`?project_id=`)",
			Description: "The same list as GET /api/v1/projects/{id}/containers, for a member of the project (an admin: any project). " +
				"400 without `project_id` or with a malformed one; 404 for a project the caller is no member of, as for an unknown one. " +
				"`page` from 1, `limit` 1-100 (default 20).",
			Message: "Containers", Op: platform.Op(s.QueryContainers)},
		{Method: http.MethodPost, Path: "/api/v1/containers", OperationID: "createContainer", Policy: platform.SignedIn, Tags: containers,
			Status: http.StatusCreated, Summary: "Create a container that runs (project owner or manager; an admin in any project)",
			Description: "Answers 201 in `creating`. The control plane makes the engine container from the catalog image with the deckhand " +
				"agent as its entrypoint, a named workspace volume, the limits and the restart policy of `autostart`, and gives the agent " +
				"a freshly minted agent token in a file only root in the container reads. The container becomes `running` once its agent " +
				"has enrolled (authenticated with that token) and its gateway answers the health check, or `failed` with a `status_reason` " +
				"(the image is not in the engine, the engine is unreachable, the agent did not enrol within the deadline). " +
				"Refused before anything is written or asked of the engine: 400 `image_id` unknown, 403 `image_id` priced and not in the " +
				"caller's library, 400 `resources.cpus` outside 0.1-64 (steps of 0.01) or `resources.memory_mb` outside 128-262144, " +
				"400 `env` (at most 64 names; names starting with DECKHAND_ are the agent's), 404 `project_id` for a project the caller is " +
				"no member of, 403 for a viewer or operator, 409 `name` taken in the project (ignoring case), 409 `project_id` when the " +
				"project holds --max-containers-per-project containers. With --runtime none the record is kept and nothing runs. " +
				"Writes `container.creating`, then `container.running` or `container.failed`." + forkDesc + poolDesc + idleDesc,
			Message: "Container created", Response: Container{}, Op: platform.Op(s.CreateContainers)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/start", OperationID: "startContainer", Policy: operate, Tags: containers,
			Summary: "Start a container",
			Description: "Starts a stopped or failed container and answers once its agent answers the health check: `running`, or `failed` " +
				"with the reason. A running or creating container answers as it is. A container whose engine object is gone (removed " +
				"outside the control plane, or a create that failed before the engine made it) is made again from its record: 200 in " +
				"`creating`. 409 while it is being deleted; 409 with --runtime none; 503 when the engine is unreachable. " +
				"Writes `container.running` or `container.failed`." + actErrs,
			Message: "Container started", Op: platform.Op(s.StartContainer)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/stop", OperationID: "stopContainer", Policy: operate, Tags: containers,
			Summary: "Stop a container",
			Description: "The agent gets 10 s to stop, then is killed; the workspace volume stays. A stopped container answers as it is. " +
				"409 while it is being deleted; 409 with --runtime none; 503 when the engine is unreachable. Writes `container.stopped`." + actErrs,
			Message: "Container stopped", Op: platform.Op(s.StopContainer)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/restart", OperationID: "restartContainer", Policy: operate, Tags: containers,
			Summary: "Restart a container",
			Description: "Stops (10 s grace) and starts the container and answers once its agent answers again: `running`, or `failed` with " +
				"the reason. 409 while it is being deleted; 409 with --runtime none; 503 when the engine is unreachable." + actErrs,
			Message: "Container restarted", Op: platform.Op(s.RestartContainer)},
		{Method: http.MethodPatch, Path: "/api/v1/containers/{id}", OperationID: "updateContainer", Policy: manage, Tags: containers,
			Summary: "Rename a container, change its limits or its autostart",
			Description: "Give `name`, `resources {cpus, memory_mb}` (both replaced; same ranges as create) or `autostart`. A rename " +
				"changes the record only (409 `name` when the project has the name). The engine applies limits and the restart policy " +
				"only to a container it makes, so a change of either makes the engine container again from the record, keeping the " +
				"workspace volume: at once when it runs (the answer is in `creating`, then it is `running` again), at its next start " +
				"when it is stopped. Writes `container.renamed`, `container.resource_updated`, `container.autostart_enabled` or " +
				"`container.autostart_disabled`. 400 for a malformed id or body, 404 for an unknown container, 403 when the caller " +
				"may not manage it, 409 while it is being deleted." + idleDesc,
			Message: "Container updated", Op: platform.Op(s.UpdateContainer)},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}", OperationID: "deleteContainer", Policy: manage, Tags: containers,
			Summary: "Delete a container, its engine objects and its record",
			Description: "Writes `container.deleting`, removes the engine container, its snapshots and its workspace volume (kept " +
				"with `?keep_workspace=true`: it is then listed at GET /api/v1/projects/{id}/workspaces, and a kept workspace the " +
				"container mounted stays either way), then the record, its agent tokens, its network configuration and its proxy permissions " +
				"document. When the engine is unreachable: 503, and the record stays `deleting` with the reason until the reconciler " +
				"finishes the delete. 400 for a malformed id, 404 for an unknown container, 403 when the caller may not manage it.",
			Message: "Container deleted", Op: platform.CommandOp(s.DeleteContainer)},

		// Network.
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}/network", OperationID: "getContainerNetwork", Policy: agentOnly(read), Tags: network,
			Summary: "The container's network configuration",
			Description: "404 when no configuration is stored. Credentials are never returned: `credentials_configured` says whether some are stored. " +
				"The container's own agent reads it with its agent token (agt_); another container's agent token gets 403. " +
				"`remote_status` is what the container's agent last reported, not what was asked: `is_running` is true only while the agent " +
				"says its rules are in the kernel (false before any report, and when the last report is over two minutes old); " +
				"`enforceable` false with a `reason` when the agent cannot apply rules (no CAP_NET_ADMIN); `in_sync` when it enforces the " +
				"stored version; `recent_decisions` are its newest egress decisions." + netErrs,
			Message: "Network configuration", Op: platform.Op(s.GetNetwork)},
		{Method: http.MethodPut, Path: "/api/v1/containers/{id}/network", OperationID: "putContainerNetwork", Policy: act, Tags: network,
			Summary: "Configure the container's outbound network",
			Description: "`type` is socks5, http, https or block. `proxy` (required unless block: 400 `Proxy URL required for non-block type`) is " +
				"`<type>://[user:pass@]host[:port]` whose scheme equals the type (socks5 also takes socks5h); userinfo credentials are stored apart, " +
				"encrypted under the master key, and never echoed; a proxy without userinfo on the same scheme, host and port keeps the stored " +
				"credentials, another endpoint drops them. `dns_servers`: up to 4 IP addresses, default 1.1.1.1 and 8.8.8.8. " +
				"Extensions: `allow` and `deny` (up to 256 each) are domains (`example.com`), wildcards (`*.example.com`: the names below it; " +
				"`*`: all), IP addresses or CIDRs; a deny entry always wins, and with an allow list whatever it does not name is refused. " +
				"The agent matches them on the DNS questions its resolver answers, the TLS SNI and the HTTP Host; an address must be one its " +
				"resolver gave for the name, so IP literals and fronted names are refused under an allow list. `block` with an allow list " +
				"lets the allowed destinations out directly. " +
				"Answers the configuration with status `configured` (a running network is reset to configured)." + netErrs,
			Message: "Network configured", Op: platform.Op(s.PutNetwork)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/network/start", OperationID: "startContainerNetwork", Policy: act, Tags: network,
			Summary: "Start the network layer",
			Description: "From configured, stopped or running: running, `is_running` true (the state asked for; the container's agent " +
				"puts the rules in force within its poll, and GET network's `remote_status` says when it has). 400 when not configured." + netErrs,
			Message: "Network started", Op: platform.Op(s.StartNetwork)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/network/stop", OperationID: "stopContainerNetwork", Policy: act, Tags: network,
			Summary:     "Stop the network layer",
			Description: "From configured, running or stopped: stopped, `is_running` false (the agent removes its rules). 400 when not configured." + netErrs,
			Message:     "Network stopped", Op: platform.Op(s.StopNetwork)},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}/network", OperationID: "deleteContainerNetwork", Policy: act, Tags: network,
			Summary:     "Remove the network configuration and its credentials",
			Description: "404 when the container or the configuration is missing." + netErrs,
			Message:     "Network configuration deleted", Op: platform.CommandOp(s.DeleteNetwork)},
		{Method: http.MethodGet, Path: NetworkEffectivePath, OperationID: "getEffectiveContainerNetwork", Policy: agent, Tags: network,
			Statuses: []int{http.StatusNotModified}, Summary: "The configuration the container's agent enforces",
			Description: "What the agent puts in force: `type`, `proxy` with its credentials as userinfo (the one answer that carries " +
				"them, opened from the sealed store), `dns_servers`, `allow`, `deny`, `running` (start and stop) and `version`. " +
				"The agent polls it with `If-None-Match` set to the ETag (`network:v<version>`) it applied: 304 when unchanged. " +
				"404 when no configuration is stored (the agent removes its rules). Every answer carries X-Service-Signature; " +
				"the agent applies nothing whose signature fails." + netErrs,
			Message: "Effective network configuration", Op: platform.Op(s.PollNetwork)},
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/network/remote-status", OperationID: "reportContainerNetwork", Policy: agent, Tags: network,
			Summary: "The agent reports what runs",
			Description: "The container's agent reports whether its rules are in force (`is_running`), when it last checked " +
				"(`last_check`), whether it can enforce at all (`enforceable`, `reason`), the version it applied, the proxy check, " +
				"decision counts and its newest decisions (at most 20). GET network shows the report as `remote_status`. " +
				"404 when no configuration is stored." + netErrs,
			Message: "Network status recorded", Op: platform.CommandOp(s.ReportNetwork)},

		// Proxy permissions: the agent's effective document (the people's
		// routes follow, per scope).
		{Method: http.MethodGet, Path: EffectivePath, OperationID: "getEffectiveProxyPermissions",
			Policy: agent, Tags: []string{"container proxy permissions"}, Statuses: []int{http.StatusNotModified},
			Summary: "The document the container's gateway enforces",
			Description: "The container's own document, or its project's (`container` \"*\") when it has none; 404 when neither exists " +
				"(the gateway then admits loopback clients only). The agent polls it with `If-None-Match` set to the last ETag it applied: " +
				"304 (signed, empty body) when unchanged. The ETag names the scope: `container:file:v<n>` or `project:file:v<n>`. " +
				"Every answer carries X-Service-Signature; the agent applies nothing whose signature fails. The document's secrets " +
				"(token values, HS256 secrets, password hashes) are in clear here and nowhere else.",
			Message: "Effective proxy permissions", Op: platform.Op(s.PollEffective)},

		// Agent tokens.
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/agent-tokens", OperationID: "createAgentToken", Policy: manage, Tags: tokens,
			Status: http.StatusCreated, Summary: "Mint an agent token for the container (the token is shown only here)",
			Description: "Answers 201 `{id, token, container_id, created_at}`; `token` starts with `agt_` and is not shown again. " +
				"The container's agent takes it with `--token` or `--token-file` (the runtime mints one for each container it makes). It is good only for that container's agent routes (the effective " +
				"proxy permissions document and the network configuration); every other route answers it 401, another container's " +
				"403. Stored as its SHA-256 only. Rotation: mint a new token, restart the agent with it, revoke the old one. " +
				"The body is empty (or `{}`). Writes `container.agent_token.created`." + tokenErrs,
			Message: "Agent token created: store it now, it is not shown again", Op: platform.Op(s.CreateAgentToken)},
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}/agent-tokens", OperationID: "listAgentTokens", Policy: manage, Tags: tokens,
			Summary:     "The container's agent tokens (never their secrets), oldest first",
			Description: "Each `{id, container_id, created_at, created_by}`." + tokenErrs,
			Message:     "Agent tokens", Op: platform.Op(s.ListAgentTokens)},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}/agent-tokens/{tokenId}", OperationID: "revokeAgentToken", Policy: manage, Tags: tokens,
			Summary: "Revoke an agent token",
			Description: "The agent using it is answered 401 from the next request on. 404 when the container has no such token. " +
				"Writes `container.agent_token.revoked`." + tokenErrs,
			Message: "Agent token revoked", Op: platform.CommandOp(s.RevokeAgentToken)},

		// Claims.
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/claims", OperationID: "mintContainerClaim", Policy: claim,
			Tags: []string{"container claims"}, Summary: "Mint a container claim",
			Description: "A claim that container `{id}` (of its project) calls container `aud`: payload `{typ: \"container\", container, " +
				"project, aud, iat, exp}` as base64url JSON (`payload_b64`), signed with the key set's active key (`kid`, `signature_hex` " +
				"over the UTF-8 bytes of payload_b64: the key set's `container_claim_signed_data`). `value` is the header form " +
				"`<payload_b64>.<signature_hex>.<kid>` for X-Deckhand-Container-Claim, which a service-identity group of the audience's " +
				"proxy permissions admits while now is within [iat, exp] (30 s skew) and aud is that container. `ttl_seconds` 30-3600, " +
				"default 300. 503 SIGNING_NOT_CONFIGURED without signing keys. 400 for a malformed id or body; 404 for an unknown " +
				"container; 403 for another container's agent token, an operator or viewer, or anyone outside the project.",
			Message: "Container claim", Op: platform.Op(s.MintContainerClaim)},

		// SSH keys.
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/ssh-keys", OperationID: "addContainerSSHKey", Policy: manage, Tags: containers,
			Status: http.StatusCreated, Summary: "Add an SSH public key to the container",
			Description: "Body `name` (1-64 characters) and `public_key` (one key in authorized_keys form, no options; RSA of at least " +
				"2048 bits). Answers `{id, container_id, name, public_key, fingerprint, created_at, created_by}`. The container's agent " +
				"writes the container's keys into its block of the authorized_keys of its user (`~/.ssh/authorized_keys` of the agent's " +
				"--run-as user: `user` in the deckhand images) within seconds, for an ssh server in the container reached through the " +
				"tunnel (program ssh); lines outside that block are the user's own and stay. 400 naming the field; 409 `public_key` " +
				"when the container has the key or already holds 32. Writes `container.ssh_key.added`." + actErrs,
			Message: "SSH key added", Op: platform.Op(s.AddSSHKey)},
		{Method: http.MethodGet, Path: "/api/v1/containers/{id}/ssh-keys", OperationID: "listContainerSSHKeys", Policy: read, Tags: containers,
			Summary: "The container's SSH public keys, oldest first", Message: "SSH keys", Op: platform.Op(s.ListSSHKeys)},
		{Method: http.MethodDelete, Path: "/api/v1/containers/{id}/ssh-keys/{keyId}", OperationID: "removeContainerSSHKey", Policy: manage, Tags: containers,
			Summary:     "Remove an SSH public key from the container",
			Description: "The agent drops it from the authorized keys within seconds. 404 when the container has no such key. Writes `container.ssh_key.removed`." + actErrs,
			Message:     "SSH key removed", Op: platform.CommandOp(s.RemoveSSHKey)},
		{Method: http.MethodGet, Path: SSHKeysEffectivePath, OperationID: "getEffectiveContainerSSHKeys", Policy: agent, Tags: containers,
			Statuses: []int{http.StatusNotModified}, Summary: "The SSH keys the container's agent writes",
			Description: "`keys` (authorized_keys lines, oldest first) and `version`. The agent polls it with `If-None-Match` set to the " +
				"ETag (`ssh-keys:<version>`) it applied: 304 when unchanged. Every answer carries X-Service-Signature." + netErrs,
			Message: "Effective SSH keys", Op: platform.Op(s.PollSSHKeys)},

		// Access tokens.
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/access-tokens", OperationID: "createAccessToken", Policy: operate,
			Tags: []string{"containers"}, Status: http.StatusCreated, Summary: "Sign a short-lived token that opens the container's agent to the caller",
			Description: "A token the container's agent gateway admits, directly (`agent_url`) or through the platform proxy (`urls`), as " +
				"`Authorization: Bearer <token>` or in the `deckhand_token` cookie, to every service or only to those `services` names " +
				"(a token naming `mcp` also reaches what the mcp tools call for its holder), until `expires_at`, beside the groups of " +
				"the container's proxy permissions document (a disabled proxy refuses it too). It is what `deckhand exec --container` and " +
				"the other agent commands use. `token` is `<payload_b64>.<signature_hex>.<kid>`, payload `{typ: \"access\", container, " +
				"sub, services, iat, exp}` signed with the key set's active key; nothing is stored, so it cannot be revoked: keep " +
				"`ttl_seconds` short (60-86400, default 3600). 400 naming the field (`services[i]` not a service of the agent); 404 for " +
				"an unknown container; 403 for a viewer or anyone outside the project; 503 SIGNING_NOT_CONFIGURED without signing keys.",
			Message: "Access token", Op: platform.Op(s.CreateAccessToken)},

		// Preview links.
		{Method: http.MethodPost, Path: "/api/v1/containers/{id}/previews", OperationID: "createPreview", Policy: manage,
			Tags: []string{"containers"}, Summary: "Sign a preview link to a port of the container",
			Description: "A link to the port preview `<project_id>-<container_id>-p<port>-1.<server_name>.<container_domain>` that opens " +
				"that port of this container (program http), and nothing else, to whoever holds it until `expires_at`, with no group of the " +
				"container's proxy permissions document: `url` carries the token once in the `deckhand_preview` query parameter and the " +
				"agent moves it into a cookie for that host (303 to the same page without it). `token` is the bare token " +
				"(`<payload_b64>.<signature_hex>.<kid>`, payload `{typ: \"preview\", container, port, iat, exp}`). `ttl_seconds` " +
				"60-604800, default 3600. 400 naming the field; 404 for an unknown container; 503 SIGNING_NOT_CONFIGURED without signing keys.",
			Status: http.StatusCreated, Message: "Preview link", Op: platform.Op(s.CreatePreview)},
	}
	routes = append(routes, s.documentRoutes(docScope{}, read, act)...)
	routes = append(routes, s.documentRoutes(docScope{project: true}, member, manager)...)
	routes = append(routes, s.stateRoutes(operate, manage, read, actErrs)...)
	routes = append(routes, s.idleRoutes(agent)...)
	routes = append(routes, s.workspaceRoutes(member, manager)...)
	routes = append(routes, s.serverRoutes()...)
	routes = append(routes, s.poolRoutes()...)
	return routes
}

// documentRoutes are the people's routes of the proxy permissions
// document in one scope (a container's or a project's), which read and
// write admit to.
func (s *Service) documentRoutes(sc docScope, read, write platform.Policy) []platform.Route {
	base, scope := "/api/v1/containers/{id}/proxy/permissions", "Container"
	tag := []string{"container proxy permissions"}
	whose, short := "the container's", "The container's"
	if sc.project {
		base, scope = "/api/v1/projects/{id}/proxy/permissions", "Project"
		tag = []string{"project proxy permissions"}
		short = "The project's"
		whose = "the project's (`container` is \"*\"; it governs every container of the project without a document of its own)"
	}
	writes := " Needs `If-Match: file:v<n>` (file:v0 when no document exists, which creates one with default deny and enable_proxy true): " +
		"428 without it, 400 when malformed, 412 when n is not the current file_version. The check and the write are one transaction, " +
		"so of writers racing with the same version exactly one succeeds. Answers the whole updated document, masked (ETag header = etag). " +
		"A group may carry `secret_configured`, `password_configured` or `value_configured` true instead of the secret: the stored " +
		"secret of the group of that name and type is kept (400 naming the field when there is none), so a document read back PUTs " +
		"unchanged. Writing a new secret (a token value, an HS256 secret, a password) needs the project's manager role or its " +
		"ownership: an operator gets 403 for it, and may change everything else. Secrets are sealed under the master key at rest."
	// r is one route of the scope: id is the operationId with the scope
	// inserted after its verb (putProxyGroup → putContainerProxyGroup).
	r := func(method, path, id, summary, desc, message string, op platform.Operation) platform.Route {
		pol := write
		if method == http.MethodGet {
			pol = read
		} else {
			desc += writes
		}
		verb := strings.IndexFunc(id, func(r rune) bool { return r >= 'A' && r <= 'Z' })
		return platform.Route{Method: method, Path: base + path, OperationID: id[:verb] + scope + id[verb:], Policy: pol, Tags: tag,
			Summary: summary, Description: desc, Message: message, Op: op}
	}
	groupDesc := map[string]string{
		proxyperm.TypeJWT: "`secret` (any string for HS256; a PEM SPKI public key that parses for RS256 — RSA of at least 2048 bits — and ES256 — P-256), " +
			"`algorithm` (HS256, RS256, ES256), `sources` (header:<Name> or cookie:<Name>, at least one), `claims` (optional; string, number or boolean values).",
		proxyperm.TypePassword: "`username` and `password`: a plaintext password (no `algorithm`, no `salt`) is stored as an argon2id PHC string " +
			"($argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>) and `algorithm` becomes argon2id; `algorithm` argon2id takes such a string as it is; " +
			"`algorithm` sha256 takes a pre-hashed SHA256(salt + password) in 64 lowercase hex digits with its optional `salt` (still verified, " +
			"but one SHA-256 round is cheap to attack: prefer a plaintext password).",
		proxyperm.TypeIP:              "`range`: an IPv4 CIDR a.b.c.d/m, m 0-32.",
		proxyperm.TypeToken:           "Exactly one of `header`, `cookie` or `param` (the name), plus `value`.",
		proxyperm.TypeServiceIdentity: "`containers` and/or `projects`: the ids whose control-plane-signed container claims belong to the group.",
	}
	toolsDesc := " Extension: any group may carry `mcp_tools`, the tool allow-list of the agent's mcp service: 1-256 tool names or " +
		"prefixes ending in one '*' (files_*; '*' alone is every tool), each at most 128 letters, digits, '_', '.' or '-' (400 " +
		"naming mcp_tools[i] otherwise; an empty array is refused: leave the field out for no list). A caller the agent's gateway " +
		"admits to the mcp service through groups carrying a list may use only the union of their lists, and still only tools of the " +
		"services its program rules reach; a caller admitted through groups without one keeps every tool. A group carrying a list " +
		"admits its holder to the mcp service only: its other program rules act through the tools, never on a request sent " +
		"straight to another service (403). Names are not checked " +
		"against the agent's tools: a name no tool has allows nothing."
	groupOp := map[string]string{proxyperm.TypeJWT: "Jwt", proxyperm.TypePassword: "Password", proxyperm.TypeIP: "Ip",
		proxyperm.TypeToken: "Token", proxyperm.TypeServiceIdentity: "ServiceIdentity"}
	o := docOps{s: s, sc: sc}
	routes := []platform.Route{
		r(http.MethodGet, "", "getProxyPermissions", short+" proxy permissions document",
			"The document of "+whose+" with `file_version` and `etag`; 404 when none exists. Secrets are never shown: an HS256 `secret`, a "+
				"password's `password` hash and `salt` and a token's `value` are absent and `secret_configured`, `password_configured` or "+
				"`value_configured` is true instead (RS256 and ES256 public keys are shown). Only the container's agent reads them, "+
				"through the effective route with its agent token.",
			"Proxy permissions", platform.Op(o.Get)),
		r(http.MethodPut, "", "replaceProxyPermissions", "Replace the whole document",
			"Body: `project` (must equal the owning project), `container` (must equal the path id; \"*\" for a project document), `groups`, "+
				"`permissions` (group name → {program: access}), `default` (allow or deny, default deny), `enable_proxy` (default true), `hooks`. "+
				"Writes proxy.permissions.group_added / group_updated / group_removed per changed group and default_changed when default or enable_proxy changes."+toolsDesc,
			"Proxy permissions replaced", platform.Op(o.Replace)),
		r(http.MethodDelete, "", "deleteProxyPermissions", "Delete the document",
			"404 when none exists. Writes group_removed per group and default_changed (document deleted).",
			"Proxy permissions deleted", platform.CommandOp(o.Delete)),
		r(http.MethodPatch, "/default", "setProxyDefault", "Set the default policy",
			"Body `default`: allow or deny. Writes proxy.permissions.default_changed when it changes.",
			"Default policy set", platform.Op(o.SetDefault)),
		r(http.MethodPatch, "/state", "setProxyState", "Enable or disable the proxy",
			"Body `enable_proxy` (boolean). Writes proxy.permissions.default_changed (payload enable_proxy) when it changes.",
			"Proxy state set", platform.Op(o.SetState)),
		r(http.MethodDelete, "/groups/{groupName}", "removeProxyGroup", "Remove a group",
			"404 when no such group. Permission rules naming the group stay and match no identity. Writes proxy.permissions.group_removed.",
			"Group removed", platform.Op(o.RemoveGroup)),
		r(http.MethodPut, "/permissions/{groupName}", "setProxyRule", "Set one program rule of a group",
			"Body `program` (http, terminal, ssh, files, exec, services, notifications, or the extension desktop: driving the agent's display) and `access`: true, false, a port 1-65535, an array of ports, "+
				"a \"<from>-<to>\" range (from <= to) or \"*\". The group need not exist. Writes proxy.permissions.group_updated.",
			"Permission set", platform.Op(o.SetRule)),
	}
	for _, typ := range proxyperm.Types {
		routes = append(routes, r(http.MethodPut, "/groups/{groupName}/"+typ, "putProxy"+groupOp[typ]+"Group", "Add or replace a "+typ+" group",
			groupDesc[typ]+" The body is the group without `type` (or with the same type). Writes proxy.permissions.group_added or group_updated."+toolsDesc,
			"Group saved", platform.Op(groupOps{docOps: o, typ: typ}.Put)))
	}
	return routes
}
