import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { workerdBinary } from "../runtime/WorkerdBinary.ts"
import { DevProblem } from "./Folder.ts"

/** The workerd version the node pins (packages/node/package.json): the one `hostplane dev` asks to install. */
export const pinnedWorkerd = "1.20261117.1"

const executable = (path: string) => {
  try {
    Fs.accessSync(path, Fs.constants.X_OK)
    return Fs.statSync(path).isFile()
  } catch {
    return false
  }
}

/** The binary of the `workerd` npm package as seen from `from` (a file path), when that package is installed there. */
const fromPackage = (from: string): string | undefined => {
  try {
    const require = createRequire(from)
    const os = process.platform === "win32" ? "windows" : process.platform
    const arch = process.arch === "x64" ? "64" : process.arch
    const platformPackage = createRequire(require.resolve("workerd/package.json")).resolve(
      `@cloudflare/workerd-${os}-${arch}/package.json`
    )
    const binary = Path.join(Path.dirname(platformPackage), "bin", os === "windows" ? "workerd.exe" : "workerd")
    return executable(binary) ? binary : undefined
  } catch {
    return undefined
  }
}

/**
 * The workerd `hostplane dev` runs, first found of: `HOSTPLANE_WORKERD` (a path to the binary); the `workerd` package
 * beside the running code (a checkout after `npm ci`, or `npm install -g workerd` next to a global CLI); the served
 * folder's own `node_modules`; `workerd` on `PATH`. None: a one-line message naming what to install.
 */
export const findWorkerd = (dir: string, env: NodeJS.ProcessEnv = process.env): string => {
  const configured = env["HOSTPLANE_WORKERD"]
  if (configured !== undefined && configured !== "") {
    if (executable(configured)) return configured
    throw new DevProblem(`HOSTPLANE_WORKERD=${configured} is not an executable file`)
  }
  try {
    const beside = workerdBinary()
    if (executable(beside)) return beside
  } catch {
    // not installed beside the CLI: look further
  }
  const inFolder = fromPackage(Path.join(Path.resolve(dir), "package.json"))
  if (inFolder !== undefined) return inFolder
  for (const folder of (env["PATH"] ?? "").split(Path.delimiter)) {
    if (folder === "") continue
    const candidate = Path.join(folder, process.platform === "win32" ? "workerd.exe" : "workerd")
    if (!executable(candidate)) continue
    // npm's `workerd` command is a Node script of the `workerd` package: run the platform binary it would start, since
    // the sandbox holds the binary's folder only.
    return fromPackage(Fs.realpathSync(candidate)) ?? candidate
  }
  throw new DevProblem(
    `hostplane dev needs workerd, the Workers runtime: install it with \`npm install -g workerd@${pinnedWorkerd}\` (or set HOSTPLANE_WORKERD to a workerd binary)`
  )
}
