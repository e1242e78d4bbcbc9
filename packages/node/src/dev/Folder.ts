import { Deployments } from "@hostplane/core"
import { Effect, Option, Result, Stream } from "effect"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"

/** The local secrets file `hostplane dev` reads, as `wrangler dev` does: dotenv syntax, never uploaded. */
export const devVarsFile = ".dev.vars"

/**
 * dotenv syntax: `NAME=value` lines, `export ` allowed before the name, `#` comments, blank lines; a value in double
 * quotes may span lines and reads `\n`, `\r`, `\t`, `\"` and `\\` escapes, one in single quotes is taken as written, an
 * unquoted one ends at ` #` and is trimmed. Lines that are not assignments are skipped.
 */
export const parseDevVars = (text: string): Record<string, string> => {
  const vars: Record<string, string> = {}
  const pattern =
    /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*("(?:\\[\s\S]|[^"\\])*"|'[^']*'|[^\n#]*?)[ \t]*(?:#[^\n]*)?$/gmu
  for (const match of text.replace(/\r\n?/g, "\n").matchAll(pattern)) {
    const name = match[1]!
    const raw = match[2] ?? ""
    if (raw.startsWith('"')) {
      vars[name] = raw
        .slice(1, -1)
        .replace(/\\([nrt"\\])/g, (_all, c: string) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c)
    } else if (raw.startsWith("'")) vars[name] = raw.slice(1, -1)
    else vars[name] = raw.trim()
  }
  return vars
}

/** One complete read of the folder: what a deploy of it would upload, plus `.dev.vars`. */
export interface Snapshot {
  /** `sha256:` of the files' paths and bytes: what the runtime keys the loaded worker by. */
  readonly digest: string
  readonly files: ReadonlyMap<string, Buffer>
  readonly manifest: Deployments.Manifest
  /** The worker's entry (`worker/index.js`...), `undefined` for an assets-only folder. */
  readonly entry: string | undefined
  readonly secrets: Readonly<Record<string, string>>
}

/** Regular files under `dir/sub`, as bundle paths (`assets/app.js`); dot files are skipped as the deploy skips them. */
const walk = (dir: string, sub: string, into: Array<string>) => {
  let entries: Array<Fs.Dirent>
  try {
    entries = Fs.readdirSync(Path.join(dir, sub), { withFileTypes: true })
  } catch {
    return
  }
  for (const entry of entries) {
    if (entry.name.startsWith(".")) continue
    const path = `${sub}/${entry.name}`
    if (entry.isDirectory()) walk(dir, path, into)
    else if (entry.isFile()) into.push(path)
  }
}

/** The files a reload depends on, sorted. */
export const folderPaths = (dir: string): Array<string> => {
  const paths: Array<string> = []
  for (const top of [Deployments.manifestPath, devVarsFile]) {
    if (Fs.existsSync(Path.join(dir, top))) paths.push(top)
  }
  walk(dir, "worker", paths)
  walk(dir, "assets", paths)
  return paths.sort()
}

/**
 * Sizes and modification times of every file a reload depends on: equal twice in a row means nothing is being
 * written. Cheap enough to take every few hundred milliseconds on a folder of a few thousand files.
 */
export const signature = (dir: string): string =>
  folderPaths(dir)
    .map((path) => {
      try {
        const stat = Fs.statSync(Path.join(dir, path))
        return `${path}\0${stat.size}\0${stat.mtimeMs}`
      } catch {
        return `${path}\0gone`
      }
    })
    .join("\n")

/** Why `hostplane dev` cannot serve (a folder it cannot read as a bundle, a port in use): the message the CLI prints. */
export class DevProblem extends Error {}

/** Reads the whole folder into memory, so what is served never changes under a request. */
export const readSnapshot = (dir: string): Snapshot => {
  const files = new Map<string, Buffer>()
  const hash = createHash("sha256")
  for (const path of folderPaths(dir)) {
    let bytes: Buffer
    try {
      bytes = Fs.readFileSync(Path.join(dir, path))
    } catch {
      continue
    }
    files.set(path, bytes)
    if (path === devVarsFile) continue
    hash.update(path).update("\0").update(String(bytes.length)).update("\0").update(bytes)
  }
  const manifestBytes = files.get(Deployments.manifestPath)
  let manifest: Deployments.Manifest = {}
  if (manifestBytes !== undefined) {
    const decoded = Effect.runSync(Effect.result(Deployments.decodeManifest(manifestBytes)))
    if (Result.isFailure(decoded)) {
      const details = decoded.failure.details
      throw new DevProblem(`${decoded.failure.message}${details === undefined ? "" : ` ${JSON.stringify(details)}`}`)
    }
    manifest = decoded.success
  }
  const paths = [...files.keys()].filter((path) => path !== devVarsFile)
  const entry = Deployments.workerEntry(manifest, paths)
  if (entry._tag === "Failure") throw new DevProblem(entry.failure.message)
  const vars = files.get(devVarsFile)
  return {
    digest: `sha256:${hash.digest("hex")}`,
    files,
    manifest,
    entry: entry.success,
    secrets: vars === undefined ? {} : parseDevVars(vars.toString("utf8"))
  }
}

/**
 * The node's ArtifactStore over the folder's snapshots, kept in memory by digest: the runtime reads a worker's modules
 * and `env.ASSETS` through it exactly as it reads a deployment's bundle. Only the reads the runtime makes are offered.
 */
export const snapshotStore = (snapshots: ReadonlyMap<string, Snapshot>): Deployments.ArtifactStore["Service"] => {
  const unsupported = () => Effect.die(new Error("hostplane dev serves a folder; it stores no artifacts"))
  return {
    put: unsupported,
    putIndex: unsupported,
    discard: unsupported,
    has: (digest) => Effect.succeed(snapshots.has(digest)),
    open: () => Stream.die(new Error("hostplane dev serves a folder; it has no tar")),
    index: (digest) =>
      Effect.sync(() => {
        const snapshot = snapshots.get(digest)
        if (snapshot === undefined) return Option.none()
        return Option.some({
          tar: digest,
          files: [...snapshot.files]
            .filter(([path]) => path !== devVarsFile)
            .map(([path, bytes]) => ({ path, offset: 0, bytes: bytes.length }))
        })
      }),
    file: (digest, path) =>
      Effect.sync(() => {
        const bytes = path === devVarsFile ? undefined : snapshots.get(digest)?.files.get(path)
        if (bytes === undefined) return Option.none()
        return Option.some({ path, bytes: bytes.length, content: Stream.succeed(new Uint8Array(bytes)) })
      })
  }
}
