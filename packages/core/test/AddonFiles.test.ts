import { type AnyArea, areas } from "@hostplane/core"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "../../..")

/**
 * The node's files every binding is folded through: the bindings' fold and declaration, the runtime that loads their
 * worker-side modules, the invoker, and the worker-side sources that build `env`. A binding's name in one of them is
 * a binding wired by hand.
 */
const nodeShared = [
  "packages/node/src/bindings/Bindings.ts",
  "packages/node/src/bindings/WorkerBinding.ts",
  "packages/node/src/bindings/Failure.ts",
  "packages/node/src/dev/DevBindings.ts",
  "packages/node/src/runtime/WorkerRuntime.ts",
  "packages/node/src/runtime/WorkerInvokerLive.ts",
  "packages/node/worker/entry.js",
  "packages/node/worker/router.js"
]

/** The node's own module of each binding (`bindings/Db.ts`...): only the node's list imports them. */
const bindingModules = Fs.readdirSync(Path.join(root, "packages/node/src/bindings"))
  .filter((file) => !nodeShared.includes(`packages/node/src/bindings/${file}`))
  .map((file) => file.replace(/\.ts$/, ""))

/**
 * The files every area is folded through. Adding an add-on adds a line to each package's areas list and nothing
 * here: an add-on's name, its folder or its namespace in one of these is a registration written by hand.
 */
const shared = [
  "packages/core/src/Area.ts",
  "packages/core/src/layer.ts",
  "packages/core/src/node/Node.ts",
  "packages/core/src/node/NodeBinding.ts",
  "packages/core/src/node/Nodes.ts",
  "packages/adapters-pg/src/Area.ts",
  "packages/adapters-providers/src/Area.ts",
  "packages/testkit/src/Area.ts",
  "packages/http/src/Area.ts",
  "packages/http/src/App.ts",
  "packages/server/src/Server.ts",
  "packages/server/src/Hostplane.ts",
  "packages/http/test/support/TestServer.ts",
  // The invoker keeps the edge's own sign-in cookies from workers: it imports the node's sign-in worker, the edge's.
  ...nodeShared.filter((file) => !file.endsWith("/WorkerInvokerLive.ts"))
]

/** Code without its comments: a comment may say what an add-on does, code may not name one. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")

/** Core's namespace of each area folder (`export * as EndUser from "./enduser/index.ts"`). */
const namespaces = new Map(
  [
    ...Fs.readFileSync(Path.join(root, "packages/core/src/index.ts"), "utf8").matchAll(
      /export \* as (\w+) from "\.\/(\w+)\/index\.ts"/g
    )
  ].map((match) => [match[2]!, match[1]!])
)

describe("adding an add-on touches no shared file but the areas lists", () => {
  const addons = (areas as ReadonlyArray<AnyArea>).filter((area) => area.addon !== undefined).map((area) => area.name)

  it("every add-on is found with its namespace", () => {
    expect(addons).toEqual(expect.arrayContaining(["database", "storage", "email", "ai", "enduser"]))
    for (const name of addons) expect(namespaces.get(name), name).toBeDefined()
  })

  it.each(shared)("%s names no add-on: no import of its folder, no use of its namespace", (file) => {
    const text = code(Fs.readFileSync(Path.join(root, file), "utf8"))
    const named = addons.filter(
      (name) =>
        new RegExp(`["'/]${name}/`).test(text) ||
        new RegExp(`\\b${namespaces.get(name)}\\.`).test(text) ||
        new RegExp(`\\b${namespaces.get(name)}\\b\\s*[,}]`).test(text)
    )
    expect(named).toEqual([])
  })

  const bindings = (areas as ReadonlyArray<AnyArea>).flatMap((area) =>
    area.node === undefined ? [] : [area.node.name]
  )

  it("every add-on a worker calls is found with its binding's module", () => {
    expect(bindings).toEqual(expect.arrayContaining(["db", "storage", "email", "ai", "auth"]))
    expect(bindingModules).toEqual(expect.arrayContaining(["Db", "Storage", "Mail", "Ai", "Auth"]))
  })

  it.each(nodeShared)("%s names no binding: not its name, not its module", (file) => {
    const text = code(Fs.readFileSync(Path.join(root, file), "utf8"))
    const named = [
      ...bindings.filter((name) => new RegExp(`\\b${name}\\b`).test(text)),
      ...bindingModules.filter((module) => new RegExp(`["'/]${module}\\.ts["']`).test(text))
    ]
    expect(named).toEqual([])
  })
})
