/**
 * TypeScript SDK of deckhand (Node 20+ and browsers): DeckhandClient for
 * the control plane, verifying every answer's X-Service-Signature with
 * WebCrypto Ed25519, and Container for one container's agent gateway.
 * Types come from openapi-typescript over each OpenAPI document the
 * binaries serve (src/gen); calls go through openapi-fetch.
 */
export { DeckhandClient, API_VERSION, DEFAULT_PAGE_SIZE, type ClientOptions, type Schemas } from "./client.js";
export {
  Container, Processes, Files, Running, UPLOAD_CHUNK, MAX_RECONNECTS,
  type Output, type Transfer, type Process, type RunResult, type RunInput, type StartInput,
  type ContainerInfo, type ContainerOptions, type Route, type Result, type Command, type FileInfo,
} from "./container.js";
export { Containers, StateError, type CreateOptions } from "./containers.js";
export { type Snapshot, type Workspace, type Lease, type ForkOptions } from "./state.js";
import "./state.js";
export { DeckhandError, SignatureError } from "./errors.js";
export { Terminal, type TerminalOptions } from "./terminal.js";
export { SIGNATURE_HEADER, NONCE_HEADER, BINDING_HEADER, PUBLIC_KEY_PATH, KEY_CACHE_TTL_MS, REPLAY_TOLERANCE_S } from "./signature.js";
export type * as control from "./gen/control.js";
export type * as process from "./gen/process.js";
export type * as files from "./gen/files.js";
export type * as terminal from "./gen/terminal.js";
export type * as display from "./gen/display.js";
export type * as cron from "./gen/cron.js";
export type * as curl from "./gen/curl.js";
export type * as daemon from "./gen/daemon.js";
export type * as exec from "./gen/exec.js";
export type * as journal from "./gen/journal.js";
export type * as notes from "./gen/notes.js";
export type * as notifications from "./gen/notifications.js";
export type * as run from "./gen/run.js";
export type * as tunnel from "./gen/tunnel.js";
export type * as vault from "./gen/vault.js";
export type * as workspace from "./gen/workspace.js";
