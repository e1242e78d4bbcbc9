import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { join } from "node:path"

/** The repository root, where `npm start` runs. */
export const root = join(import.meta.dirname, "../../../..")

export const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })

export interface ServerProcess {
  readonly child: ChildProcess
  /** Everything it wrote to stdout and stderr so far. */
  readonly output: () => string
}

/**
 * The standalone binary, exactly as `npm start` runs it, with `env`; answers once `GET <base>/v1/config` does. Git over
 * SSH gets a free port unless `env` names one, so servers of parallel tests never race for the default 2222.
 */
export const startServer = async (base: string, env: Record<string, string>, tries = 240): Promise<ServerProcess> => {
  let output = ""
  const sshListen = `127.0.0.1:${await freePort()}`
  const child = spawn(process.execPath, ["--conditions=@hostplane/source", "packages/server/src/bin/server.ts"], {
    cwd: root,
    env: { ...process.env, SERVICE_GIT_SSH_LISTEN: sshListen, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  for (let i = 0; i < tries; i++) {
    const up = await fetch(`${base}/v1/config`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false
    )
    if (up) return { child, output: () => output }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  child.kill("SIGKILL")
  throw new Error(`server did not start:\n${output}`)
}
