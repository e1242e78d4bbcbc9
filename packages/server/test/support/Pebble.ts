import { testAuthority } from "@hostplane/testkit"
import { type ChildProcess, spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import * as Https from "node:https"
import { createConnection, createServer, type Server, type Socket } from "node:net"
import { join } from "node:path"
import { freePort } from "./ServerProcess.ts"

export interface Pebble {
  readonly process: ChildProcess
  /** The directory URL the server is given as `SERVICE_ACME_DIRECTORY`. */
  readonly directory: string
  /** The PEM file of the root Pebble's own HTTPS is signed by (`SERVICE_ACME_CA_FILE`). */
  readonly caFile: string
  readonly output: () => string
  /** How many orders Pebble has created so far, from its log. */
  readonly orders: () => number
  /** The root Pebble issues certificates under (a new one at every start). */
  readonly root: () => Promise<string>
  readonly stop: () => void
}

/**
 * Debian's `pebble` (Let's Encrypt's ACME test server) in `dir`, resolving names through `dnsServer` (hostplane's own
 * DNS) and validating HTTP-01 on `httpPort`. `acmePort` is where its ACME API listens (a test may put a gate in
 * front and give the server the gate's port instead, since Pebble writes its URLs from the Host it is asked on).
 */
export const startPebble = async (options: {
  readonly dir: string
  readonly dnsServer: string
  readonly httpPort: number
  readonly acmePort?: number
  readonly blocked?: ReadonlyArray<string>
}): Promise<Pebble> => {
  const ca = testAuthority()
  const { dir } = options
  const pebbleCert = ca.issue(["localhost", "127.0.0.1"])
  writeFileSync(join(dir, "pebble.pem"), pebbleCert.chain)
  writeFileSync(join(dir, "pebble.key"), pebbleCert.key)
  writeFileSync(join(dir, "ca.pem"), ca.root)
  const acmePort = options.acmePort ?? (await freePort())
  const managementPort = await freePort()
  writeFileSync(
    join(dir, "pebble.json"),
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: join(dir, "pebble.pem"),
        privateKey: join(dir, "pebble.key"),
        httpPort: options.httpPort,
        tlsPort: await freePort(),
        ocspResponderURL: "",
        externalAccountBindingRequired: false,
        domainBlocklist: options.blocked ?? []
      }
    })
  )
  const child = spawn("pebble", ["-config", join(dir, "pebble.json"), "-dnsserver", options.dnsServer], {
    env: { ...process.env, PEBBLE_VA_NOSLEEP: "1", PEBBLE_WFE_NONCEREJECT: "0", PEBBLE_AUTHZREUSE: "0" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const root = () =>
    new Promise<string>((resolve, reject) =>
      Https.get(`https://127.0.0.1:${managementPort}/roots/0`, { ca: ca.root }, (response) => {
        let body = ""
        response.on("data", (chunk) => (body += chunk))
        response.on("end", () => resolve(body))
      }).on("error", reject)
    )
  // Pebble is up once its management API answers.
  for (let i = 0; i < 200; i++) {
    if ((await root().catch(() => undefined)) !== undefined) break
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    process: child,
    directory: `https://127.0.0.1:${acmePort}/dir`,
    caFile: join(dir, "ca.pem"),
    output: () => output,
    orders: () => output.match(/Added order "/g)?.length ?? 0,
    root,
    stop: () => void child.kill("SIGKILL")
  }
}

/**
 * A TCP relay the test controls, put between two parties to decide when bytes may pass: `hold` keeps new
 * connections waiting unanswered (a validation the CA started and cannot finish), `freeze` stops every byte in
 * both directions on the connections it has and keeps new ones waiting (a party that can no longer tell the other
 * anything), `open` lets everything waiting through to `target()` and relays freely from then on.
 */
export interface Gate {
  readonly port: number
  /** Connections waiting to be let through. */
  readonly waiting: () => number
  /** Paths of the HTTP requests seen on connections let through (plain HTTP only). */
  readonly paths: () => ReadonlyArray<string>
  readonly hold: () => void
  readonly freeze: () => void
  readonly open: () => void
  readonly close: () => Promise<void>
}

export const startGate = async (target: () => number, options: { readonly http?: boolean } = {}): Promise<Gate> => {
  let state: "open" | "hold" = "open"
  const waiting: Array<Socket> = []
  const pairs = new Set<{ client: Socket; upstream: Socket }>()
  const paths: Array<string> = []
  const relay = (client: Socket) => {
    const upstream = createConnection({ host: "127.0.0.1", port: target() })
    const pair = { client, upstream }
    pairs.add(pair)
    if (options.http === true) {
      client.on("data", (chunk: Buffer) => {
        const line = /^[A-Z]+ (\S+) HTTP\//.exec(chunk.toString("latin1"))
        if (line !== null) paths.push(line[1]!)
      })
    }
    client.pipe(upstream)
    upstream.pipe(client)
    const end = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("error", end).on("close", end)
    upstream.on("error", end).on("close", end)
    client.resume()
  }
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    if (state === "open") return relay(client)
    waiting.push(client)
    client.on("error", () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as { port: number }).port,
    waiting: () => waiting.filter((socket) => !socket.destroyed).length,
    paths: () => paths,
    hold: () => void (state = "hold"),
    freeze: () => {
      state = "hold"
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        client.pause()
        upstream.pause()
      }
    },
    open: () => {
      state = "open"
      for (const socket of waiting.splice(0)) if (!socket.destroyed) relay(socket)
    },
    close: async () => {
      for (const socket of waiting.splice(0)) socket.destroy()
      for (const { client, upstream } of pairs) {
        client.destroy()
        upstream.destroy()
      }
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
