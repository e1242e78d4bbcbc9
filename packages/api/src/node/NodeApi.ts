import { Errors, Node } from "@hostplane/core"
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
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Node", description: "The node API (decisions.md part 6)." })) {}
