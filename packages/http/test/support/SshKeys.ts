import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { execSmall } from "./SmallSpawner.ts"

const run = async (file: string, args: ReadonlyArray<string>) => {
  const result = await execSmall(file, args)
  if (result.code !== 0) throw new Error(`${file} failed (${result.code}): ${result.stderr}`)
  return result
}

export interface GeneratedKey {
  /** The private key file, for `ssh -i`. */
  readonly file: string
  readonly publicKey: string
  /** What `ssh-keygen -lf` prints as the fingerprint. */
  readonly fingerprint: string
}

// The keys' folders of the running file. A worker process is killed, not exited, at the end of a run (no "exit"
// listener runs), so each file that makes keys removes them in its own `afterAll(removeGeneratedKeys)`.
const keyFolders = new Set<string>()

/** Removes every key this process made so far (a worker runs one file at a time). */
export const removeGeneratedKeys = () => {
  for (const folder of keyFolders) Fs.rmSync(folder, { recursive: true, force: true })
  keyFolders.clear()
}

/**
 * A key made by the real `ssh-keygen` in a throwaway folder (removed by `removeGeneratedKeys`). Asynchronous: a synchronous
 * `ssh-keygen` stalls the event loop the in-process test server shares for seconds on a loaded machine, so the
 * server's keep-alive timer and the client's next request fire together and that request meets a closed socket.
 */
export const generateKey = async (
  type: string,
  options: { bits?: number; comment?: string } = {}
): Promise<GeneratedKey> => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-ssh-key-"))
  keyFolders.add(dir)
  const file = Path.join(dir, "id")
  const args = ["-q", "-t", type, "-N", "", "-C", options.comment ?? "test@example.test", "-f", file]
  if (options.bits !== undefined) args.push("-b", String(options.bits))
  await run("ssh-keygen", args)
  const fingerprint = (await run("ssh-keygen", ["-l", "-E", "sha256", "-f", `${file}.pub`])).stdout.split(" ")[1]!
  return { file, publicKey: Fs.readFileSync(`${file}.pub`, "utf8").trim(), fingerprint }
}
