import { createRequire } from "node:module"
import * as Path from "node:path"

/**
 * The workerd binary of the pinned `workerd` npm package: it ships inside the platform package npm installs beside it
 * (`@cloudflare/workerd-<os>-<arch>`), so nothing is downloaded at install or at start.
 */
export const workerdBinary = (): string => {
  const require = createRequire(import.meta.url)
  const os = process.platform === "win32" ? "windows" : process.platform
  const arch = process.arch === "x64" ? "64" : process.arch
  // Resolved from the `workerd` package so its own pinned platform package is the one found.
  const workerdPackage = require.resolve("workerd/package.json")
  const platformPackage = createRequire(workerdPackage).resolve(`@cloudflare/workerd-${os}-${arch}/package.json`)
  return Path.join(Path.dirname(platformPackage), "bin", process.platform === "win32" ? "workerd.exe" : "workerd")
}
