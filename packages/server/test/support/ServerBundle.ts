import { build } from "esbuild"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

/** The standalone binary's entry, relative to the repository root. */
const entry = "packages/server/src/bin/server.ts"

/**
 * Bundled with the server's own sources: hostplane's packages (their TypeScript sources, as `npm start` loads them)
 * and Effect, which is plain ES modules that find no file beside themselves. Every other package stays an import that
 * Node resolves and loads from `node_modules` as it does for `npm start`.
 */
const bundled = /^(@hostplane\/|effect($|\/)|@effect\/)/

/**
 * Sources find files beside themselves through `import.meta` (the runtime's worker sources, the console's built app,
 * `createRequire` of a package): in a bundle that would be the bundle's own URL, so each module gets its source file's.
 * Effect's modules are left to esbuild (much less work than passing each through here): the only one reading
 * `import.meta.url` requires Node's own modules with it, which resolve from anywhere.
 */
const sourceFileUrls = {
  name: "source-file-urls",
  setup(builder: import("esbuild").PluginBuild) {
    builder.onResolve({ filter: /^[^./]/ }, (args) =>
      bundled.test(args.path) ? undefined : { path: args.path, external: true }
    )
    builder.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      const text = await Fs.readFile(args.path, "utf8")
      const contents = text.includes("import.meta")
        ? text
            .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
            .replaceAll("import.meta.dirname", JSON.stringify(Path.dirname(args.path)))
            .replaceAll("import.meta.filename", JSON.stringify(args.path))
        : text
      return { contents, loader: "ts" as const }
    })
  }
}

export interface ServerBundle {
  /** The bundle to run with `node` instead of `entry`. */
  readonly file: string
  /** The repository's own source files it was built from (not `node_modules`), to tell when it went stale. */
  readonly sources: ReadonlyArray<string>
  /** When the build started: a source modified after it makes the bundle stale. */
  readonly builtAt: number
}

/**
 * The standalone binary as one ES module in `directory` (a fresh name per build), for test servers that do not test
 * `npm start` itself. A server started from source spends about 2 CPU-s more on loading its modules (Node strips the
 * types of each of some 500 files and links about 1,000 modules) than from this bundle, and a run starts some 40.
 * `directory` must sit inside the repository: Node resolves the bundle's external imports from the bundle's folder.
 */
export const buildServerBundle = async (root: string, directory: string): Promise<ServerBundle> => {
  const builtAt = Date.now()
  const file = Path.join(directory, `server-${builtAt}-${Math.random().toString(36).slice(2)}.mjs`)
  const result = await build({
    absWorkingDir: root,
    entryPoints: [entry],
    outfile: file,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    conditions: ["@hostplane/source"],
    // What Node's type stripping keeps: class fields with define semantics, imports as written.
    tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, verbatimModuleSyntax: true } },
    plugins: [sourceFileUrls],
    metafile: true,
    logLevel: "warning"
  })
  const sources = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes("node_modules/"))
    .map((input) => Path.resolve(root, input))
  return { file, sources, builtAt }
}

/** Whether a source the bundle was built from changed since (vitest's watch mode runs the setup only once). */
export const isStale = async (bundle: ServerBundle): Promise<boolean> => {
  const changed = await Promise.all(
    bundle.sources.map((source) =>
      Fs.stat(source).then(
        (stat) => stat.mtimeMs >= bundle.builtAt,
        () => true
      )
    )
  )
  return changed.includes(true)
}
