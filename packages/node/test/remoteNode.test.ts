import { ArtifactStoreDisk, BundleReader } from "@hostplane/adapters-providers"
import { Deployments } from "@hostplane/core"
import { bundleOf, manifestEntry } from "@hostplane/testkit/deployments/BundleFixtures"
import { Context, Effect, Exit, Layer, Option, Redacted, Result, Scope, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { backends } from "../../http/test/support/backends.ts"
import { useSuite } from "../../http/test/support/TestServer.ts"
import * as ArtifactStoreNodeApi from "../src/remote/ArtifactStoreNodeApi.ts"
import { defaultRuntimeSettings, WorkerRuntime } from "../src/index.ts"

const nodeToken = "node-token-remote-7c1e"

const worker = `export default {
  async fetch(request, env) {
    const asset = await env.ASSETS.fetch(new URL("/hello.txt", request.url))
    return new Response("worker " + new URL(request.url).pathname + " " + (await asset.text()))
  }
}`

const text = (stream: Stream.Stream<Uint8Array, unknown>) =>
  Effect.runPromise(Stream.mkString(Stream.decodeText(stream)))

/** The node's own store: a folder of its own, filled only from the node API. */
const nodeStore = (dir: string, url: string, token: string) =>
  ArtifactStoreNodeApi.layer({ url, token: Redacted.make(token) }).pipe(
    Layer.provide(BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layer(dir))))
  )

/** Builds a layer in a scope the test closes. */
const build = async <A>(layer: Layer.Layer<A, unknown>, scopes: Array<Scope.Closeable>) => {
  const scope = Effect.runSync(Scope.make())
  scopes.push(scope)
  return Effect.runPromise(Layer.buildWithScope(layer, scope))
}

/** A request to a workerd shard's socket as the edge's worker hop sends it. */
const invoke = (socketPath: string, key: string, url: string) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = Http.request(
      {
        socketPath,
        method: "GET",
        path: new URL(url).pathname,
        headers: { host: new URL(url).host, "x-hostplane-invoke": JSON.stringify({ key, url }) }
      },
      (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") })
        )
      }
    )
    request.on("error", reject)
    request.end()
  })

describe("decisions.md part 13: a node on another machine runs from the node API alone", () => {
  const suite = useSuite(backends[1]![1], { node: { token: nodeToken } })
  const scopes: Array<Scope.Closeable> = []
  const dirs: Array<string> = []
  const tempDir = async () => {
    const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-node-"))
    dirs.push(dir)
    return dir
  }
  afterAll(async () => {
    for (const scope of scopes.reverse()) await Effect.runPromise(Scope.close(scope, Exit.void))
    for (const dir of dirs) await Fs.rm(dir, { recursive: true, force: true })
  })

  const deploy = async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const bytes = await Effect.runPromise(
      bundleOf([
        manifestEntry({ name: "remote" }),
        { name: "worker/index.js", content: worker },
        { name: "assets/hello.txt", content: "hello from assets" }
      ])
    )
    const uploaded = await fetch(`${suite.server.url}/v1/orgs/${slug}/projects/${project.name}/deployments`, {
      method: "POST",
      headers: { authorization: `Bearer ${suite.admin.token}`, "content-type": "application/gzip" },
      body: bytes
    })
    expect(uploaded.status).toBe(201)
    return { project, bytes, digest: `sha256:${createHash("sha256").update(bytes).digest("hex")}` }
  }

  it("with only the node token, the node learns the live deployment from the state, fetches its bundle by digest, and its workerd runs the worker, which reads its asset", async () => {
    const { project, digest } = await deploy()
    const state = await fetch(`${suite.server.url}/v1/node/state?after=0`, {
      headers: { authorization: `Bearer ${nodeToken}` }
    })
    expect(state.status).toBe(200)
    const live = ((await state.json()) as { projects: Array<any> }).projects.find((p) => p.projectId === project.id)
    expect(live.deployment.digest).toBe(digest)
    expect(live.hostnames).toContain(project.hostname)

    // The node's side: its own folder, the node API, workerd. No store of the server's is reachable from here.
    const dir = await tempDir()
    const node = await build(
      Layer.provideMerge(
        WorkerRuntime.layer({ ...defaultRuntimeSettings, shards: 1 }),
        nodeStore(dir, suite.server.url, nodeToken)
      ),
      scopes
    )
    const store = Context.get(node, Deployments.ArtifactStore)
    const runtime = Context.get(node, WorkerRuntime)
    const manifestFile = await Effect.runPromise(store.file(digest, Deployments.manifestPath))
    const manifest = await Effect.runPromise(
      Deployments.decodeManifest(new TextEncoder().encode(await text(Option.getOrThrow(manifestFile).content)))
    )
    const index = Option.getOrThrow(await Effect.runPromise(store.index(digest)))
    const entry = Result.getOrThrow(
      Deployments.workerEntry(
        manifest,
        index.files.map((file) => file.path)
      )
    )
    expect(entry).toBe("worker/index.js")
    const asset = Option.getOrThrow(await Effect.runPromise(store.file(digest, "assets/hello.txt")))
    expect(await text(asset.content)).toBe("hello from assets")

    const key = runtime.register({
      projectId: project.id,
      deploymentId: live.deployment.id,
      digest,
      manifest,
      entry: entry!,
      secrets: {},
      bindings: {}
    })
    const shard = runtime.shardOf(project.id)
    await runtime.ready(shard, 120_000)
    const answer = await invoke(runtime.socketOf(shard), key, `http://${project.hostname}/api/hello`)
    expect(answer).toEqual({ status: 200, body: "worker /api/hello hello from assets" })
  })

  it("a bundle fetched once is served from the node's folder: another node process on it needs no token; an unknown digest is none, a refused token an outage", async () => {
    const { digest } = await deploy()
    const dir = await tempDir()
    const first = Context.get(
      await build(nodeStore(dir, suite.server.url, nodeToken), scopes),
      Deployments.ArtifactStore
    )
    expect(Option.isSome(await Effect.runPromise(first.index(digest)))).toBe(true)
    const unknown = `sha256:${"0".repeat(64)}`
    expect(Option.isNone(await Effect.runPromise(first.index(unknown)))).toBe(true)

    const restarted = Context.get(
      await build(nodeStore(dir, suite.server.url, "wrong-token"), scopes),
      Deployments.ArtifactStore
    )
    const file = Option.getOrThrow(await Effect.runPromise(restarted.file(digest, "assets/hello.txt")))
    expect(await text(file.content)).toBe("hello from assets")
    const refused = await Effect.runPromise(Effect.flip(restarted.index(unknown)))
    expect(refused._tag).toBe("ArtifactStoreUnavailable")
    expect(refused.message).toContain("401")
  })

  it("bytes that do not hash to the digest asked for are refused, and nothing is served from them", async () => {
    const { digest } = await deploy()
    const other = await Effect.runPromise(
      bundleOf([manifestEntry({ name: "other" }), { name: "assets/hello.txt", content: "not the deployed one" }])
    )
    // A server that answers every digest with another bundle.
    const liar = Http.createServer((_request, response) => {
      response.writeHead(200, { "content-type": "application/gzip" })
      response.end(other)
    })
    await new Promise<void>((resolve) => liar.listen(0, "127.0.0.1", resolve))
    try {
      const store = Context.get(
        await build(
          nodeStore(await tempDir(), `http://127.0.0.1:${(liar.address() as AddressInfo).port}`, nodeToken),
          scopes
        ),
        Deployments.ArtifactStore
      )
      const failure = await Effect.runPromise(Effect.flip(store.file(digest, "assets/hello.txt")))
      expect(failure._tag).toBe("ArtifactStoreUnavailable")
      expect(failure.message).toContain("other bytes")
      // Asked again, it is refused again: the other bundle is never taken for this digest.
      expect((await Effect.runPromise(Effect.flip(store.index(digest))))._tag).toBe("ArtifactStoreUnavailable")
    } finally {
      liar.closeAllConnections()
      await new Promise((resolve) => liar.close(resolve))
    }
  })
})
