import { Database, Edge, EndUser, Errors, Node } from "@hostplane/core"
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { apiErrors } from "../errors/ApiError.ts"
import { secretSuccess } from "../server/NoStore.ts"

const authorization = {
  authorization: Schema.optionalKey(Schema.String.annotate({ description: "`Bearer <SERVICE_NODE_TOKEN>`." }))
}

const describe = (description: string) => OpenApi.annotations({ description })

/** decisions.md part 6: what a node converges on, authorized by `SERVICE_NODE_TOKEN` rather than a session. */
export class NodeApi extends HttpApiGroup.make("node")
  .add(
    HttpApiEndpoint.get("state", "/node/state", {
      headers: authorization,
      query: Node.NodeStateQuery,
      success: Node.NodeState,
      error: apiErrors(Errors.BadRequest, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Desired state for nodes")
      .annotateMerge(
        describe(
          [
            "`Authorization: Bearer <SERVICE_NODE_TOKEN>`; unset setting: 501 `node_api_off`; a wrong or missing token:",
            "401. Answers `{ revision, projects }`: the projects changed after `after` (exclusive, default 0), each once",
            "with what a node applies now (hostnames that route, the live deployment, the access mode, secret names and",
            "versions, and `bindings` whose entries are `null` when not granted; `db` is DatabaseConnect). A project",
            "deleted (or being deleted) comes with `removed: true`. The revision rises with every deploy, rollback,",
            "grant, revoke, secret, hostname and access change; read again with `after=<revision>`. At most 200",
            "projects per answer: `revision` then is the last one's, so reading on from it misses nothing."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.get("secrets", "/node/projects/:projectId/secrets", {
      headers: authorization,
      params: { projectId: Schema.String },
      success: secretSuccess(Node.OpenedSecrets),
      error: apiErrors(Errors.NotFound, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "A project's opened secrets")
      .annotateMerge(
        describe(
          "Node token as for the state. `{ items: [{ name, version, value }] }`, the values opened: the worker's environment. Unknown project 404. Never logged, never cached (`Cache-Control: no-store`)."
        )
      ),
    HttpApiEndpoint.get("artifact", "/node/artifacts/:digest", {
      headers: authorization,
      params: { digest: Schema.String },
      success: HttpApiSchema.StreamUint8Array({ contentType: "application/gzip" }),
      error: apiErrors(Errors.NotFound, Errors.Unauthorized, Errors.NodeApiOff, Errors.ArtifactStoreUnavailable)
    })
      .annotate(OpenApi.Summary, "A deployment's bundle")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. The bundle a deployment was made from (`deployment.digest` in the node",
            "state), streamed as it was uploaded: the gzipped tar, `Content-Type: application/gzip`, `ETag` the",
            "digest (quoted). A node on another machine runs from these bytes and caches",
            "them by digest: they never change. A digest that is no accepted bundle of this service is 404."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("usage", "/node/usage", {
      headers: authorization,
      payload: Node.UsageReport,
      success: Node.UsageRecorded,
      error: apiErrors(Errors.BadRequest, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Report storage usage")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ items: [{ projectId, storageBytes }] }` (at most 10,000 items,",
            "`storageBytes` a non-negative integer): the bytes each project's storage prefix holds now, shown as",
            "StorageStatus `usedBytes`. A project listed twice takes its last line. Ids of projects that hold no storage",
            "(unknown, deleted, never granted) are ignored, not refused, so one stale id never loses a whole report:",
            "answers `{ recorded, ignored }` with their ids in `ignored`. A revoked project keeps its objects, so its",
            "usage is still recorded."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("accessCheck", "/node/access/check", {
      headers: authorization,
      payload: Edge.NodeAccessCheck,
      success: Edge.NodeAccessChecked,
      error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Check a visitor's access pass")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ projectId, host, bypass?, pass? }`: the `Service-Access-Bypass`",
            "header and the `__Host-service_access` cookie a visitor sent to `host` (each at most 256 characters).",
            "Answers `{ admitted }` under the project's access policy as it is now: `public` admits everyone; `org` a",
            "pass issued at this host to a user who is a member (or higher) of the owning org today; `password` a",
            "pass earned with the current password; the bypass secret admits in every mode. Unknown or deleted project:",
            "404. Nothing presented is logged."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("accessCode", "/node/access/code", {
      headers: authorization,
      payload: Edge.NodeAccessCode,
      success: secretSuccess(Edge.NodePass),
      error: apiErrors(Errors.BadRequest, Errors.Forbidden, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Exchange an authorize code for a pass")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ host, code }`: the one-time code of `POST /v1/access/authorize`",
            "that a visitor brought to `/__service/access/callback` on `host`. Answers `{ pass, maxAge }`, a new pass",
            "(the cookie's value, kept only as its SHA-256; `maxAge` in seconds) for that host and the code's user;",
            "403 `forbidden` when the code is unknown, used, expired, issued for another host, or its user is no",
            "longer a member. Every attempt at the code's own host uses it up. `Cache-Control: no-store`; never logged."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("accessPassword", "/node/access/password", {
      headers: authorization,
      payload: Edge.NodeAccessPassword,
      success: secretSuccess(Edge.NodePass),
      error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Exchange the shared password for a pass")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ projectId, host, password }`: the password a visitor posted to",
            "`/__service/access/password` on `host`. Answers `{ pass, maxAge }`: a new pass for that host when the",
            "project's mode is `password` and the password is right (a new password ends it), else `pass: null`.",
            "Unknown or deleted project: 404. The node limits attempts per client and host itself.",
            "`Cache-Control: no-store`; neither the password nor the pass is logged."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("signIn", "/node/auth/signin", {
      headers: authorization,
      payload: EndUser.NodeSignIn,
      success: secretSuccess(EndUser.NodeSignedIn),
      error: apiErrors(Errors.BadRequest, Errors.NotFound, Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "Run an end-user sign-in request")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ projectId, host, method, url, flow?, session? }`: a request a visitor",
            "sent to `/__service/auth/*` on `host` (`url` its path and query), with the values of the",
            "`__Host-service_auth_flow` and `__Host-service_auth` cookies it carried. The control plane runs the",
            "sign-in flow of spec 4.9 on it, with the providers' client secrets and the project database it holds, and",
            'answers `{ answer }` for the node to send as it is: `{ _tag: "Redirect", location, cookies }` or',
            '`{ _tag: "Json", status, body, cookies? }`, each cookie `{ name, value, maxAge }` (host-only, Secure,',
            "HttpOnly, SameSite=Lax; `maxAge` 0 removes it); `answer: null` when sign-in is not granted (the path is",
            "then the deployment's). Unknown or deleted project: 404. `Cache-Control: no-store`; no cookie value, code",
            "or client secret is logged."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.post("endUser", "/node/auth/user", {
      headers: authorization,
      payload: EndUser.NodeEndUserQuery,
      success: secretSuccess(EndUser.NodeEndUser),
      error: apiErrors(
        Errors.BadRequest,
        Errors.NotFound,
        Errors.Unauthorized,
        Errors.NodeApiOff,
        Errors.AuthUnavailable
      )
    })
      .annotate(OpenApi.Summary, "The end user of a session")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. Body `{ projectId, session }`: the `__Host-service_auth` cookie a worker's",
            "request carried (what `env.auth.user(request)` resolves). Answers `{ user: { id, email, name, provider } }`",
            "for an unexpired session in the project's database, `{ user: null }` otherwise or when sign-in is not",
            "granted. Unknown or deleted project: 404; the project's database not answering: 503 `auth_unavailable`.",
            "`Cache-Control: no-store`; the session is never logged."
          ].join(" ")
        )
      ),
    HttpApiEndpoint.get("databaseAuthority", "/node/database/authority", {
      headers: authorization,
      success: Database.NodeDatabaseAuthority,
      error: apiErrors(Errors.Unauthorized, Errors.NodeApiOff)
    })
      .annotate(OpenApi.Summary, "The database clusters' certificate authority")
      .annotateMerge(
        describe(
          [
            "Node token as for the state. `{ authority }`: the PEM certificate of the authority that signs the",
            "database clusters' server certificates (their names are the `host` of each DatabaseConnect), what a node",
            "verifies a project database's certificate with when it connects `env.db` with `sslmode` `require`;",
            "`null` when the clusters have none (TLS is then encrypted, not verified, on every node). A public",
            "certificate, nothing secret."
          ].join(" ")
        )
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Node", description: "The node API (decisions.md part 6)." })) {}
