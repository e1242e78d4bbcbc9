// postinstall: builds ssh2's optional native crypto binding for the Node that runs hostplane (the `node` package
// pinned in devDependencies, first on npm's PATH here), when the binding ssh2's own install step built does not load.
//
// Why: npm runs ssh2's install step with whatever `node` comes first on its PATH at that moment, often the system's
// (another major version, so another ABI): the binding then fails to load under the pinned Node and ssh2 silently
// falls back to creating two ChaCha20 ciphers and a WebAssembly Poly1305 per 32 KiB packet and writing each packet to
// the socket in three pieces. The SSH git transport then takes about 1.5x the server CPU per clone (bench/README.md).
// The binding stays optional, as in ssh2: when it cannot be built this prints why and exits 0.
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

const require = createRequire(import.meta.url)
const ssh2Dir = Path.dirname(require.resolve("ssh2/package.json"))
const cryptoDir = Path.join(ssh2Dir, "lib", "protocol", "crypto")
const binding = Path.join(cryptoDir, "build", "Release", "sshcrypto.node")

/** Whether the binding loads in a fresh process of this Node (a failed dlopen is remembered within one process). */
const loads = () =>
  spawnSync(process.execPath, ["-e", `require(${JSON.stringify(binding)})`], { stdio: "ignore" }).status === 0

/** A folder with `include/node/node_version.h` of exactly this Node's version, for node-gyp's `--nodedir`. */
const headersOf = (dir) => {
  try {
    const header = Fs.readFileSync(Path.join(dir, "include", "node", "node_version.h"), "utf8")
    const part = (name) => new RegExp(`#define ${name} (\\d+)`).exec(header)?.[1]
    const version = `v${part("NODE_MAJOR_VERSION")}.${part("NODE_MINOR_VERSION")}.${part("NODE_PATCH_VERSION")}`
    return version === process.version ? dir : undefined
  } catch {
    return undefined
  }
}

const nodeDirCandidates = () => {
  const found = [Path.dirname(Path.dirname(Fs.realpathSync(process.execPath)))]
  try {
    // The `node` package installs the binary from node-<platform>-<arch>, which ships the headers beside it.
    const nodePackage = Path.dirname(require.resolve("node/package.json"))
    const platformPackage = `node-${process.platform === "win32" ? "win" : process.platform}-${process.arch}`
    found.push(Path.dirname(require.resolve(`${platformPackage}/package.json`, { paths: [nodePackage] })))
  } catch {}
  if (process.env.npm_config_nodedir) found.push(process.env.npm_config_nodedir)
  return found
}

if (!Fs.existsSync(cryptoDir)) process.exit(0)
if (loads()) process.exit(0)

const nodeDir = nodeDirCandidates()
  .map(headersOf)
  .find((dir) => dir !== undefined)
const env = { ...process.env }
// A configured nodedir of another Node version would build against the wrong headers; without one node-gyp fetches
// the right ones.
delete env.npm_config_nodedir
delete env.NPM_CONFIG_NODEDIR
const nodeGyp = process.env.npm_config_node_gyp
const command = nodeGyp ? process.execPath : "node-gyp"
const args = [
  ...(nodeGyp ? [nodeGyp] : []),
  "rebuild",
  `--target=${process.version}`,
  `--real_openssl_major=${/^\d+/.exec(process.versions.openssl)[0]}`,
  ...(nodeDir ? [`--nodedir=${nodeDir}`] : [])
]
console.log(`ssh2: its crypto binding does not load under Node ${process.version}; rebuilding it for this Node`)
const built = spawnSync(command, args, { cwd: cryptoDir, env, stdio: "inherit", shell: !nodeGyp })
if (built.status === 0 && loads()) console.log("ssh2: crypto binding rebuilt and loads")
else console.log("ssh2: the crypto binding could not be built; SSH transfers use ssh2's slower JavaScript ciphers")
process.exit(0)
