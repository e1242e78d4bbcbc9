// The CLI bundle's esbuild plugin that imports Effect's modules instead of its barrels (scripts/bundle.mjs).
import { existsSync, readFileSync } from "node:fs"
import * as Path from "node:path"

/**
 * The modules an Effect barrel (`effect`, `effect/http`, ...) re-exports, by the name it exports them under: a
 * namespace (`Effect` is `effect/Effect`) or one export of a module (`pipe` of `effect/Function`), read from the
 * barrel's own index in `root`'s node_modules; `undefined` for a specifier that is no barrel. `@hostplane/core`'s
 * areas are read from its index the same way.
 */
export const barrelExports = (root, specifier) => {
  if (specifier === "@hostplane/core") return coreExports(root)
  const folder = specifier === "effect" ? "" : `${specifier.slice("effect/".length)}/`
  const index = Path.join(root, "node_modules/effect/dist", folder, "index.js")
  if (!existsSync(index)) return undefined
  const text = readFileSync(index, "utf8")
  const names = new Map()
  for (const [, name, module] of text.matchAll(/export \* as (\w+) from "\.\/([\w/-]+)\.js"/gu)) {
    names.set(name, { namespace: `effect/${folder}${module}` })
  }
  for (const [, list, module] of text.matchAll(/export \{([^}]*)\} from "\.\/([\w/-]+)\.js"/gu)) {
    for (const name of list
      .replace(/\/\*[\s\S]*?\*\//gu, "")
      .split(",")
      .map((each) => each.trim())) {
      if (/^\w+$/u.test(name)) names.set(name, { from: `effect/${folder}${module}` })
    }
  }
  return names
}

/** The areas `@hostplane/core`'s index re-exports as namespaces (`Errors` is `@hostplane/core/errors/index`). */
const coreExports = (root) => {
  const text = readFileSync(Path.join(root, "packages/core/src/index.ts"), "utf8")
  const names = new Map()
  for (const [, name, module] of text.matchAll(/export \* as (\w+) from "\.\/([\w/-]+)\.ts"/gu)) {
    names.set(name, { namespace: `@hostplane/core/${module}` })
  }
  return names
}

const barrelImport = /import\s*\{([^}]*)\}\s*from\s*"(effect(?:\/[\w-]+)?|@hostplane\/core)"/gu

/**
 * `source` with each `import { Effect, Schema } from "effect"` written as `import * as Effect from "effect/Effect";
 * import * as Schema from "effect/Schema"` (and the same for `effect/http`, the other barrels and `@hostplane/core`),
 * `exportsOf` giving a barrel's names (`barrelExports`). Type-only names are dropped; an import naming anything the barrel does
 * not re-export as a namespace or a plain export stays as written.
 */
export const importModules = (source, exportsOf) =>
  source.replace(barrelImport, (statement, list, specifier) => {
    const names = exportsOf(specifier)
    if (names === undefined) return statement
    const imports = []
    for (const entry of list.split(",").map((each) => each.trim())) {
      if (entry === "" || entry.startsWith("type ")) continue
      const [name, local = name] = entry.split(/\s+as\s+/u)
      const target = names.get(name)
      if (target === undefined) return statement
      imports.push(
        target.namespace === undefined
          ? `import { ${name} as ${local} } from "${target.from}"`
          : `import * as ${local} from "${target.namespace}"`
      )
    }
    return imports.join("; ")
  })

/**
 * The plugin: hostplane's TypeScript sources import Effect's modules, not its barrels. The commands load the client,
 * deploy and dev code lazily (`import()`), which makes esbuild initialize every module lazily, and a lazily
 * initialized barrel initializes every module it re-exports (`effect`'s are 143): a third of the bundle and about
 * 0.1 CPU-s of each command's start went to modules no command uses. `@hostplane/core`'s index is one too: through
 * it, the client of one API group initialized every area's services.
 */
export const effectModules = (root) => ({
  name: "effect-modules",
  setup(builder) {
    const barrels = new Map()
    const exportsOf = (specifier) => {
      if (!barrels.has(specifier)) barrels.set(specifier, barrelExports(root, specifier))
      return barrels.get(specifier)
    }
    builder.onLoad({ filter: /\.ts$/ }, (args) =>
      args.path.includes(`${Path.sep}node_modules${Path.sep}`)
        ? undefined
        : { contents: importModules(readFileSync(args.path, "utf8"), exportsOf), loader: "ts" }
    )
  }
})
