// Builds what `npm start` runs: the standalone binary (`packages/server/src/bin/server.ts`) as one ES module,
// `packages/server/bundle/hostplane-server.mjs`, and the same for the remote node's binary (`npm run start:node`).
// The root `prepare` runs it, so `npm ci` leaves both in a checkout; `start.mjs` builds again when a source is newer.
// Node loads one module instead of stripping the types of some 500 source files and linking about 1,000 modules: a
// start costs about 2 CPU-s less. Plain JavaScript: it runs under whichever Node npm finds first.
import * as Fs from "node:fs"
import { createRequire, isBuiltin } from "node:module"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The repository root: entries and the manifest's paths are relative to it. */
export const root = fileURLToPath(new URL("../../..", import.meta.url))

/** Each binary `start.mjs` can run: its entry and its bundle. */
export const binaries = {
  server: { entry: "packages/server/src/bin/server.ts", bundle: "packages/server/bundle/hostplane-server.mjs" },
  node: { entry: "packages/node/src/bin/node.ts", bundle: "packages/node/bundle/hostplane-node.mjs" }
}

/**
 * Bundled: hostplane's packages (their TypeScript sources, the `@hostplane/source` condition, as a development
 * checkout resolves them) and Effect, plain ES modules that find no file beside themselves. Every other package stays
 * an import that Node resolves from `node_modules` at start, as it does for the sources; the bundle sits inside the
 * repository, so those imports resolve from the same root `node_modules`.
 */
const bundled = /^(@hostplane\/|effect($|\/)|@effect\/)/

/**
 * Sources find files beside themselves through `import.meta` (the runtime's worker sources, the console's built app,
 * `createRequire` of a package): in a bundle that would be the bundle's own URL, so each source module gets its own
 * file's. Effect's modules are left to esbuild (much less work than passing each through here): the only one reading
 * `import.meta.url` requires Node's own modules with it, which resolve from anywhere.
 */
const sourceFileUrls = {
  name: "source-file-urls",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) =>
      bundled.test(args.path) ? undefined : { path: args.path, external: true }
    )
    builder.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      const text = await Fs.promises.readFile(args.path, "utf8")
      const contents = text.includes("import.meta")
        ? text
            .replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href))
            .replaceAll("import.meta.dirname", JSON.stringify(Path.dirname(args.path)))
            .replaceAll("import.meta.filename", JSON.stringify(args.path))
        : text
      return { contents, loader: "ts" }
    })
  }
}

/**
 * Node's builtins and the packages left outside the bundle are loaded with `require` (one `createRequire` of the
 * bundle's own URL, the banner's), not imported: an ES import of a builtin builds its ES facade, which reads every
 * export once, getters included (`node:http`'s `WebSocket` compiles Node's internal undici, `node:tls`'s
 * `rootCertificates` parses the CA list: about 0.15 CPU-s of a start), and an ES import of a CommonJS package parses
 * its source for export names first. esbuild's interop reads an export only when the code uses it. `node:module` stays
 * an import: the banner needs it first.
 */
const requiredModules = {
  name: "required-modules",
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) =>
      bundled.test(args.path) || args.path === "node:module" || args.kind !== "import-statement"
        ? undefined
        : { path: args.path, namespace: "required" }
    )
    builder.onLoad({ filter: /.*/, namespace: "required" }, (args) => ({
      contents: isBuiltin(args.path)
        ? `module.exports = __hostplaneRequire(${JSON.stringify(args.path)})`
        : `module.exports = __hostplaneLazy(${JSON.stringify(args.path)}, ${JSON.stringify(shapeOf(args.path))})`,
      loader: "js"
    }))
  }
}

/**
 * What a package left outside the bundle exports, read here by loading it: whether it is a function, the names of its
 * own properties, and the values of its boolean ones (such as `__esModule`, which esbuild's interop reads at once).
 */
const shapeOf = (name) => {
  const loaded = createRequire(Path.join(root, "package.json"))(name)
  const own = Object.entries(Object.getOwnPropertyDescriptors(loaded))
  // A getter is not called here: pg's `native`, for one, tries to load another package.
  const isFlag = ([, descriptor]) => typeof descriptor.value === "boolean"
  return {
    callable: typeof loaded === "function",
    names: own.filter((entry) => !isFlag(entry)).map(([key]) => key),
    flags: Object.fromEntries(own.filter(isFlag).map(([key, descriptor]) => [key, descriptor.value]))
  }
}

/**
 * A package left outside the bundle is required at its first use, not at start: esbuild's interop copies a module's
 * exports as getters of the importer's namespace when the importer is evaluated, so the bundle gets a stand-in with
 * the package's export names as getters that require it. A package that is a function (often a class) gets a
 * function stand-in that forwards calls and `new`; its `prototype` inherits from the package's once loaded, so an
 * instance made through it (or through a class extending it) has the package's methods and is an instance of both.
 * Most such packages serve what a start does not ask for (ssh2 until an SSH connection, pg for a
 * worker's database binding, ws for a WebSocket upgrade, tar-stream for a database image) and each cost tens of
 * milliseconds of CPU to load.
 */
const banner = `import { createRequire as __hostplaneCreateRequire } from "node:module";
const __hostplaneRequire = __hostplaneCreateRequire(import.meta.url);
const __hostplaneLazy = (name, { callable, names, flags }) => {
  let loaded;
  const load = () => {
    if (loaded === undefined) {
      loaded = __hostplaneRequire(name);
      if (callable && typeof loaded.prototype === "object") Object.setPrototypeOf(standIn.prototype, loaded.prototype);
    }
    return loaded;
  };
  const standIn = callable
    ? function (...args) { return new.target === undefined ? load().apply(this, args) : Reflect.construct(load(), args, new.target); }
    : {};
  for (const key of names)
    if (!Object.hasOwn(standIn, key)) Object.defineProperty(standIn, key, { get: () => load()[key], enumerable: true });
  return Object.assign(standIn, flags);
};`

/**
 * esbuild's options for a bundle of hostplane's sources as `npm start` runs them, its entry and output aside: also
 * what a test uses to start a source script of its own as one module.
 */
export const buildOptions = {
  absWorkingDir: root,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node22",
  conditions: ["@hostplane/source"],
  // What Node's type stripping keeps: class fields with define semantics, imports as written.
  tsconfigRaw: { compilerOptions: { useDefineForClassFields: true, verbatimModuleSyntax: true } },
  plugins: [requiredModules, sourceFileUrls],
  banner: { js: banner },
  legalComments: "none",
  logLevel: "warning"
}

/**
 * Besides the sources a bundle was built from: what else makes it stale. The installed packages (npm rewrites its
 * hidden lockfile on every install; Effect is inside the bundle) and this build itself.
 */
const alsoInputs = ["node_modules/.package-lock.json", "packages/server/scripts/bundle.mjs"]

/** The bundle's manifest: the files it was built from and when the build started. */
const manifestOf = (bundle) => `${bundle}.json`

/**
 * Builds `name`'s bundle. Written beside its place and renamed over it, so a start meanwhile (a test server in
 * another test file) loads the old bundle or the new one, never half of one; the manifest is renamed last, so a start
 * that reads a new bundle with the old manifest only builds once more.
 */
export const bundle = async (name) => {
  // Imported here: a start whose bundle is fresh never loads esbuild.
  const { build } = await import("esbuild")
  const { entry, bundle: output } = binaries[name]
  const builtAt = Date.now()
  const file = Path.join(root, output)
  const temporary = `${file}.${process.pid}.tmp`
  Fs.mkdirSync(Path.dirname(file), { recursive: true })
  const result = await build({ ...buildOptions, entryPoints: [entry], outfile: temporary, metafile: true })
  const sources = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes("node_modules/") && !input.startsWith("required:"))
    .concat(alsoInputs)
  Fs.renameSync(temporary, file)
  const manifest = { builtAt, sources }
  Fs.writeFileSync(`${manifestOf(file)}.${process.pid}.tmp`, JSON.stringify(manifest))
  Fs.renameSync(`${manifestOf(file)}.${process.pid}.tmp`, manifestOf(file))
  return file
}

/**
 * Whether a bundle built as `manifest` says (`{ builtAt, sources }`, paths relative to `root`) is older than one of its
 * inputs: a source edited (or checked out, which git stamps with the time of the checkout) or removed, or the packages
 * installed again since it was built.
 */
export const outdated = (manifest) => {
  for (const source of manifest.sources) {
    const stat = Fs.statSync(Path.join(root, source), { throwIfNoEntry: false })
    if (stat === undefined) {
      // Only a checkout without an npm install has no hidden lockfile, and nothing to bundle Effect from either.
      if (source !== alsoInputs[0]) return true
    } else if (stat.mtimeMs >= manifest.builtAt) return true
  }
  return false
}

/** Whether `name`'s bundle is missing or `outdated`. */
export const isStale = (name) => {
  const file = Path.join(root, binaries[name].bundle)
  try {
    return !Fs.existsSync(file) || outdated(JSON.parse(Fs.readFileSync(manifestOf(file), "utf8")))
  } catch {
    return true
  }
}

/**
 * `name`'s bundle, built first when it is stale. esbuild's service process is stopped after the build: it would
 * otherwise live as long as the binary it built, holding about 230 MiB.
 */
export const fresh = async (name) =>
  isStale(name)
    ? bundle(name).finally(async () => (await import("esbuild")).stop())
    : Path.join(root, binaries[name].bundle)

// Run as a script (the root `prepare`): build every binary.
if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const name of Object.keys(binaries)) await bundle(name)
}
