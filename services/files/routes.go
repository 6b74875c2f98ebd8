package files

import (
	"net/http"

	"deckhand/platform"
)

// Routes is the file service's route table.
func (s *Service) Routes() []platform.Route {
	tags := []string{"files"}
	routes := []platform.Route{
		{Method: "GET", Path: "/api/v1/version", OperationID: "getVersion", Summary: "Server and API version",
			Description: "server_version is the deckhand build (the same string `deckhand version` prints); " +
				"version is the file API version (" + APIVersion + "), which changes only when this API changes incompatibly.",
			Tags: []string{"meta"}, Policy: platform.Public, Op: platform.ReadOp(s.Version)},
		{Method: "GET", Path: "/api/v1/files", OperationID: "listFiles", Tags: tags, Summary: "List a directory",
			Description: "Entries sorted by name with size, mode, owner, group, mtime and, for links, the stored target " +
				"(links are listed, never followed). depth 1 lists the directory's own entries; deeper levels follow each " +
				"directory's entry. Names starting with a dot (and what is under them) are left out unless hidden=true. " +
				"A listing stops at limit entries with truncated=true.",
			Op: platform.Op(s.ListDir),
			Tool: &platform.Tool{Name: "files_list", Title: "List a directory",
				Description: "List a directory's entries (name, type, size, mode, modified), sorted; depth > 1 descends.",
				Text:        "{{range .entries}}{{.mode}} {{.path}}{{if eq .type \"dir\"}}/{{end}} {{.size}}\n{{end}}",
				ReadOnly:    true, Idempotent: true}},
		{Method: "DELETE", Path: "/api/v1/files", OperationID: "deleteFile", Tags: tags, Summary: "Delete a file, link or directory",
			Description: "A link is removed, not its target. A directory that is not empty answers 409 CONFLICT unless " +
				"recursive=true. The root itself cannot be deleted. 204 on success.",
			Status: 204, Op: platform.CommandOp(s.Remove),
			Tool: &platform.Tool{Name: "files_delete", Title: "Delete",
				Description: "Delete a file, link or directory (a non-empty directory only with recursive).",
				Text:        "deleted {{arg \"path\"}}", Destructive: true, Idempotent: true}},
		{Method: "GET", Path: "/api/v1/files/stat", OperationID: "statFile", Tags: tags, Summary: "Describe one path",
			Description: "Like one listing entry; a final symbolic link is described itself (lstat), with its target.",
			Op:          platform.Op(s.StatPath),
			Tool: &platform.Tool{Name: "files_stat", Title: "Describe a path",
				Description: "Type, size, mode, owner and modification time of one path (a link is described itself).",
				Text:        "{{.path}}: {{.type}}, {{.size}} bytes, mode {{.mode}}", ReadOnly: true, Idempotent: true}},
		{Method: "GET", Path: "/api/v1/files/text", OperationID: "readFileText", Tags: tags, Summary: "Read a file as text",
			Description: "A whole file of at most 32 MiB as JSON: its text when it is UTF-8 and not an image, else its bytes " +
				"(base64) as data, with its type, size and ETag. A larger file answers 413 (download it with GET " +
				"/api/v1/files/content).",
			Op: platform.Op(s.ReadText),
			Tool: &platform.Tool{Name: "files_read", Title: "Read a file",
				Description: "Read a file of the container. Text is answered from offset, at most max_chars characters, with a marker " +
					"saying where to read on; an image (PNG, JPEG, GIF, WebP) is answered as image content.",
				Pages: "text", Image: "data", ReadOnly: true, Idempotent: true}},
		{Method: "PUT", Path: "/api/v1/files/text", OperationID: "writeFileText", Tags: tags, Summary: "Write a file's text",
			Description: "Creates or replaces a whole file with content, as PUT /api/v1/files/content does with a raw body " +
				"(missing parents created, readers never see half a file); if_match makes it conditional on the ETag a read " +
				"answered (412 when the file changed). Answers the written entry.",
			Op: platform.Op(s.WriteText),
			Tool: &platform.Tool{Name: "files_write", Title: "Write a file",
				Description: "Create or replace a whole file with content (text). Missing parent directories are created; readers " +
					"never see half a file. To change part of a file use files_edit.",
				Text: "wrote {{.size}} bytes to {{.path}}", Destructive: true, Idempotent: true}},
		{Method: "GET", Path: "/api/v1/files/content", OperationID: "downloadFile", Tags: tags, Summary: "Download a file",
			Description: "Streams the file (sendfile on TCP). Content-Type by extension, else sniffed from the first 512 " +
				"bytes. ETag and Last-Modified are set; If-None-Match answers 304. One Range (bytes=a-b, a-, -n) answers 206 " +
				"with Content-Range, a range outside the file 416 RANGE_NOT_SATISFIABLE; several ranges get the whole file. " +
				"If-Range with another ETag gets the whole file. A directory answers 409 (use /api/v1/files/archive), so do a fifo, " +
				"socket or device (never opened waiting). Every answer carries X-Content-Type-Options: nosniff; a type a browser " +
				"could run as a page (SVG, HTML, XML, any type other than raster images, audio, video, fonts, PDF, text/plain, " +
				"JSON and application/octet-stream) also carries Content-Security-Policy: " + platform.SandboxCSP + ", so a file " +
				"opened from the agent's origin runs no script there.",
			ContentType: "application/octet-stream", Statuses: []int{http.StatusPartialContent, http.StatusNotModified},
			Op: platform.Op(s.Download)},
		{Method: "GET", Path: "/api/v1/files/checksum", OperationID: "checksumFile", Tags: tags, Summary: "SHA-256 of a file",
			Description: "Reads the whole file and answers its hex SHA-256 with its size and ETag at that moment: a client " +
				"that downloaded the file (with ranges, across reconnects) compares the ETag it got with the bytes and then " +
				"the hash. A file written while it is hashed answers 409 CONFLICT; a directory 409 as the download does.",
			Op: platform.Op(s.ChecksumPath)},
		{Method: "PUT", Path: "/api/v1/files/content", OperationID: "uploadFile", Tags: tags, Summary: "Upload a file (raw body or multipart form)",
			Description: "A raw body becomes the file at path. A multipart/form-data body writes each file part to " +
				"path/<part's filename> (path is then a directory) and answers the list of entries. The body is streamed to " +
				"a temporary file beside the target, fsynced and renamed into place, so readers never see half a file and a " +
				"failed upload leaves the old content; missing parents are created. If-Match with the file's ETag makes the " +
				"write conditional (412 PRECONDITION_FAILED when the file changed; of two writers with the same ETag exactly " +
				"one wins), If-None-Match: * refuses to replace. sha256 (hex) is checked before the rename (400 INVALID " +
				"details sha256 on mismatch). A body over --files-max-upload answers 413. 201 for a new file, 200 when replaced; " +
				"with overwrite=false an existing file answers 409 CONFLICT. mode defaults to the replaced file's, else 0644.",
			Status: 201, Statuses: []int{http.StatusOK}, Op: platform.Op(s.Upload)},
		{Method: "POST", Path: "/api/v1/files/mkdir", OperationID: "makeDirectory", Tags: tags, Summary: "Create a directory",
			Description: "parents (default true) creates missing parents and accepts an existing directory, like mkdir -p; " +
				"parents=false answers 409 when it exists.", Status: 201, Op: platform.Op(s.MakeDir)},
		{Method: "POST", Path: "/api/v1/files/move", OperationID: "moveFile", Tags: tags, Summary: "Move or rename",
			Description: "rename(2) within the root: atomic on one file system, 409 across file systems. Parents of to are " +
				"created. An existing destination answers 409 unless overwrite=true. A directory cannot move into itself.",
			Op: platform.Op(s.MoveEntry),
			Tool: &platform.Tool{Name: "files_move", Title: "Move or rename",
				Description: "Move or rename a file or directory. An existing destination is an error unless overwrite.",
				Text:        "moved {{arg \"from\"}} to {{.path}}", Destructive: true}},
		{Method: "POST", Path: "/api/v1/files/copy", OperationID: "copyFile", Tags: tags, Summary: "Copy (directories recursively)",
			Description: "Files keep their mode (copy_file_range where the kernel can), directories are copied with " +
				"everything in them, symbolic links are copied as links, never followed; sockets, fifos and devices are " +
				"skipped. An existing destination answers 409 unless overwrite=true (then it is replaced).",
			Status: 201, Op: platform.Op(s.CopyEntry)},
		{Method: "POST", Path: "/api/v1/files/chmod", OperationID: "chmodFile", Tags: tags, Summary: "Change permission bits",
			Description: "mode is octal. recursive applies it to everything under a directory; links are skipped (Linux has no lchmod).",
			Op:          platform.Op(s.ChangeMode)},
		{Method: "POST", Path: "/api/v1/files/chown", OperationID: "chownFile", Tags: tags, Summary: "Change owner and group",
			Description: "owner and group are names or numeric ids; either may be left out. Links are changed themselves " +
				"(lchown). Needs the privilege to chown: as --files-user the kernel refuses with 403 FORBIDDEN.",
			Op: platform.Op(s.ChangeOwner)},
		{Method: "GET", Path: "/api/v1/files/search", OperationID: "searchFiles", Tags: tags, Summary: "Search by name and content",
			Description: "Walks path (links not followed). name is a glob matched against the base name (path.Match " +
				"syntax: *, ?, [a-z]). content is a regular expression (Go RE2 syntax) matched line by line; files that look " +
				"binary (a NUL in the first 8 KiB) or are larger than max_file_size are skipped. gitignore=true honours " +
				".gitignore files on the way (and skips .git). The search stops at max_results matches or max_files " +
				"files visited, with truncated=true.",
			Op: platform.Op(s.Search),
			Tool: &platform.Tool{Name: "files_search", Title: "Find files and grep",
				Description: "Find files under path by name glob and/or grep their contents with a regular expression; answers " +
					"the matching paths (with line number and line for content matches).",
				Text:     "{{range .matches}}{{.path}}{{if .line}}:{{.line}}: {{.text}}{{end}}\n{{end}}",
				ReadOnly: true, Idempotent: true}},
		{Method: "GET", Path: "/api/v1/files/archive", OperationID: "downloadArchive", Tags: tags, Summary: "Download a directory as zip or tar.gz",
			Description: "Streamed as it is built (no temporary file, no Content-Length). Links are stored as links, " +
				"hidden files included; files that cannot be read are skipped.",
			ContentType: "application/octet-stream", Op: platform.Op(s.Archive)},
		{Method: "PUT", Path: "/api/v1/files/tar", OperationID: "uploadTar", Tags: tags, Summary: "Upload a directory as one tar stream",
			Description: "The body (tar, or tar.gz with gzip=true or Content-Encoding: gzip) is unpacked into path as it " +
				"arrives; each file goes to a temporary name and is renamed, parents are created. Entries naming a path that " +
				"climbs out (.., absolute) stop the upload with 403 OUTSIDE_ROOT; hard links, devices and fifos are skipped. " +
				"Answers the number of files and bytes written.",
			RequestType: "application/x-tar", Op: platform.Op(s.UnpackTar)},
		{Method: "POST", Path: "/api/v1/files/uploads", OperationID: "startUpload", Tags: tags, Summary: "Start a resumable upload",
			Description: "In the spirit of tus: declare path and size, then PATCH bytes at Upload-Offset. The partial " +
				"file lives beside the target and the session in the service's store, so an upload resumes across " +
				"connections and agent restarts. When the last byte arrives the optional sha256 is checked and the file " +
				"renamed into place (if_match, when given, must still be the target's ETag). A link at path is treated as by " +
				"PUT content: one inside the root is written through (the link stays), one leading out is 403 OUTSIDE_ROOT, " +
				"when the upload starts and again when it completes.",
			Status: 201, Op: platform.Op(s.StartUpload)},
		{Method: "GET", Path: "/api/v1/files/uploads/{id}", OperationID: "getUpload", Tags: tags, Summary: "Where a resumable upload stands",
			Description: "offset is how many bytes the service holds; continue from there.", Op: platform.Op(s.GetUpload)},
		{Method: "PATCH", Path: "/api/v1/files/uploads/{id}", OperationID: "appendUpload", Tags: tags, Summary: "Append to a resumable upload",
			Description: "Upload-Offset (header) must equal the current offset, else 409 CONFLICT with the offset in " +
				"details. The body is appended; a connection that breaks keeps what arrived. Bytes past the declared size " +
				"answer 413. The answer carries the new offset and, when complete, the written entry.",
			Op: platform.Op(s.AppendUpload)},
		{Method: "DELETE", Path: "/api/v1/files/uploads/{id}", OperationID: "abandonUpload", Tags: tags, Summary: "Abandon a resumable upload",
			Description: "Removes the partial file. 204.", Status: 204, Op: platform.CommandOp(s.AbandonUpload)},
		{Method: "GET", Path: "/api/v1/files/watch", OperationID: "watchFiles", Tags: tags, Summary: "Watch for changes (Server-Sent Events)",
			Description: "inotify through fsnotify. Each event is `id: <seq>`, `event: <type>`, `data: <Event JSON>`; seq " +
				"increases by one per event of the service. The stream opens with `event: ready` carrying the current seq. " +
				"To resume, reconnect with Last-Event-ID (EventSource does it itself) or since=<last seq>: the service " +
				"replays what it kept (the last 4096 events) and continues live; if events after that seq are no longer " +
				"kept it first sends `event: lost` with code EVENTS_LOST instead of a silent gap. Directories stay watched " +
				"once asked for, so changes during a reconnect are recorded. New directories are watched at once and what " +
				"they already hold is reported as created. A client that stops reading is disconnected, not skipped. " +
				"A recursive watch adds one inotify watch per directory before `ready` (seconds for a whole system; kernel " +
				"file systems such as /proc and /sys are not descended); past 100,000 directories or the kernel's " +
				"max_user_watches it answers 409 CONFLICT asking for a narrower path.",
			ContentType: "text/event-stream", Op: platform.Op(s.Watch)},
	}
	return append(routes, s.davRoutes()...)
}

// davRoutes are WebDAV's methods on /dav/, one operation each, all
// answered by s.DAV.
func (s *Service) davRoutes() []platform.Route {
	common := "golang.org/x/net/webdav over the same root and confinement as the REST API, with locks (in memory), dead " +
		"properties kept in the service's store (moved and deleted with their resource), conditional PUT (If-Match, " +
		"If-None-Match and the entity tags of an If header), atomic PUT (temporary file and rename) and the REST API's " +
		"errors (403 OUTSIDE_ROOT, 403 with the OS reason, 507 disk full, 413 over --files-max-upload). Mount with " +
		"rclone, davfs2 or a desktop file manager at /dav/. A link in a listing is described by its target when that " +
		"lies in the root (left out otherwise), and no request walks through a link. Fifos, sockets and devices are " +
		"listed, refused by GET (409) and skipped by COPY. " +
		"Errors: WebDAV clients get RFC 4918's DAV:error (application/xml) holding the precondition element where the " +
		"RFC names one (propfind-finite-depth, no-conflicting-lock) and code, details and message elements in the " +
		"namespace " + errorNS + " (the same values as the JSON error); a request whose Accept prefers " +
		"application/json gets the service's JSON error instead. Besides the REST codes: 423 LOCKED, 502 " +
		"FOREIGN_DESTINATION (a Destination on another server)."
	xml := "application/xml"
	ops := []struct {
		method, id, summary, desc, contentType string
		status                                 int
		statuses                               []int
	}{
		{"GET", "davGet", "Download a file (a collection answers 405)",
			"Anything but a collection is the REST download (sendfile, ranges, ETag and If-None-Match, nosniff, the " +
				"sandboxing Content-Security-Policy for types a browser could run). HEAD answers the same headers.",
			"application/octet-stream", 200, []int{http.StatusPartialContent, http.StatusNotModified}},
		{"PUT", "davPut", "Write a file",
			"The body goes to a temporary file renamed into place (the old content stays when the upload fails). A new " +
				"file gets 0666 less the agent's umask, a replaced one keeps its mode. OC-Checksum (SHA1:<hex> or " +
				"MD5:<hex>, as rclone and the ownCloud clients send it) is checked before the rename: a mismatch is 400 " +
				"INVALID with details OC-Checksum and leaves the old content. X-OC-Mtime (seconds) becomes the file's " +
				"modification time, answered X-OC-Mtime: accepted.",
			xml, 201, nil},
		{"DELETE", "davDelete", "Delete a resource",
			"A collection with everything in it; a link itself (dangling ones and ones leading out included), never what " +
				"it points to.", xml, 204, nil},
		{"OPTIONS", "davOptions", "The methods a resource takes",
			"Allow lists them; DAV: 1, 2.", xml, 200, nil},
		{"PROPFIND", "davPropfind", "Properties of a resource and its members",
			"Of a collection Depth 0 or 1 only: Depth: infinity, or no Depth header, is 403 with RFC 4918's " +
				"<D:propfind-finite-depth/> (section 9.1); of a file it is the file alone. The multistatus is streamed " +
				"as the directory is read. Naming <oc:checksums xmlns:oc=\"http://owncloud.org/ns\"/> in the prop list " +
				"answers each file's ownCloud checksums (<oc:checksum>SHA1:<hex> MD5:<hex></oc:checksum>), computed on " +
				"demand and kept for the 4096 most recently asked files while they are unchanged (inode, size, mtime, " +
				"ctime): rclone with vendor owncloud or nextcloud then checks by hash without downloading. allprop " +
				"leaves them out.", xml, 207, nil},
		{"PROPPATCH", "davProppatch", "Set or remove dead properties",
			"Kept in the service's store, moved, copied and deleted with their resource.", xml, 207, nil},
		{"MKCOL", "davMkcol", "Create a collection",
			"The directory gets 0777 less the agent's umask (0755 under the usual 022). An existing one answers 405, a " +
				"missing parent 409.", xml, 201, nil},
		{"COPY", "davCopy", "Copy a resource to Destination",
			"Collections recursively; a link is copied as a link (as POST /api/v1/files/copy does). New files start " +
				"from the source's mode less the umask. Overwrite: F refuses to replace.", xml, 201, []int{http.StatusNoContent}},
		{"MOVE", "davMove", "Move a resource to Destination",
			"rename(2) within the root; a link moves itself. Overwrite: F refuses to replace.", xml, 201, []int{http.StatusNoContent}},
		{"LOCK", "davLock", "Lock a resource (exclusive or shared write lock)",
			"Locks last at most an hour: a Timeout of Infinite, none or more than Second-3600 gets Second-3600, said in " +
				"the answer's Timeout header and lockdiscovery; refresh a lock to keep it. Locking a missing resource " +
				"creates it empty (201).", xml, 200, []int{http.StatusCreated}},
		{"UNLOCK", "davUnlock", "Release a lock", "Lock-Token names the lock.", xml, 204, nil},
	}
	routes := make([]platform.Route, 0, len(ops))
	for _, o := range ops {
		routes = append(routes, platform.Route{Method: o.method, Path: "/dav/{path...}", OperationID: o.id,
			Tags: []string{"webdav"}, Summary: o.summary, Description: o.desc + "\n\n" + common,
			ContentType: o.contentType, Status: o.status, Statuses: o.statuses, Op: platform.Op(s.DAV)})
	}
	return routes
}
