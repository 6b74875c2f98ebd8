// What a role on a project lets its holder do, as the API's policies
// decide (control/projects/routes.go): pages show only the actions the
// API would carry out for the signed-in user.
import { get } from "./api.js";

// manages: change the project and its members; delete, snapshot and
// fork its containers (owner, manager; an administrator anywhere).
export const manages = (role) => role === "owner" || role === "manager" || role === "admin";

// operates: start, stop, restart, pause and resume its containers (also
// an operator).
export const operates = (role) => manages(role) || role === "operator";

// projectRole is the user's role on a project: "admin" for an
// administrator (every right in every project), "" when the project
// cannot be read (then no action is shown).
export async function projectRole(user, projectId) {
  if (user?.role === "admin") return "admin";
  try {
    return (await get(`/api/v1/projects/${encodeURIComponent(projectId)}`)).data.role || "";
  } catch {
    return "";
  }
}
