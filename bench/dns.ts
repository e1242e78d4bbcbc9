// `node --conditions=@hostplane/source bench/dns.ts [--duration <s>]`
//
// Queries per second of hostplane's authoritative name server, unsigned and signed (DNSSEC, DO bit set), beside a
// bare dns-packet UDP echo server (decode the query, encode one A answer) in the same run, each in its own process,
// loaded by dnsperf (Debian's `dnsperf`). Prints each figure and the ratios to the echo server. The anchor is NSD
// (Debian's `nsd`, one server process like ours) serving the same zone from a zone file, unsigned and signed with
// `ldns-signzone` (ECDSA P-256, NSEC, like ours); skipped with a note when those tools are missing.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as Dgram from "node:dgram"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "./support/harness.ts"

const argv = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const index = argv.indexOf(name)
  return index >= 0 ? (argv[index + 1] ?? fallback) : fallback
}
const zone = "bench.example"

/** The child: one server on an ephemeral port, printing `port <n>` once it answers. */
const serve = async (kind: string) => {
  if (kind === "echo") {
    const Packet = (await import("dns-packet")).default
    const socket = Dgram.createSocket("udp4")
    socket.on("message", (message, remote) => {
      const query = Packet.decode(message)
      const answer = Packet.encode({
        type: "response",
        id: query.id,
        flags: Packet.AUTHORITATIVE_ANSWER,
        questions: query.questions,
        answers: [{ type: "A", name: query.questions?.[0]?.name ?? zone, ttl: 300, data: "192.0.2.1" }]
      })
      socket.send(answer, remote.port, remote.address)
    })
    socket.bind(0, "127.0.0.1", () => console.log(`port ${socket.address().port}`))
    return
  }
  const { Effect, Layer } = await import("effect")
  const { configLayer, Dns, Kernel, Orgs } = await import("@hostplane/core")
  const { layerMemory } = await import("@hostplane/testkit")
  const { SealerAesGcm } = await import("@hostplane/adapters-providers")
  const { NameServer } = await import("@hostplane/adapters-providers/dns/NameServer")
  const { Sealer } = await import("@hostplane/core/secrets/Sealer")
  const program = Effect.gen(function* () {
    const store = yield* Dns.ZoneStore
    const sealer = yield* Sealer
    const orgId = Kernel.makeId("org", "org_bench")
    const at = new Date().toISOString()
    yield* (yield* Orgs.OrgStore).insert({
      id: orgId,
      slug: "bench",
      name: "Bench",
      plan: "free",
      personal: false,
      createdAt: at
    })
    yield* store.insert({ name: zone, orgId, serial: 1, dnssec: "off", key: null, dsRecorded: [], createdAt: at })
    yield* store.putRrset(zone, { name: "www", type: "A", ttl: 300, records: ["192.0.2.1"] })
    if (kind === "signed") {
      const key = yield* Dns.newZoneKey(zone)
      const { Redacted } = yield* Effect.promise(() => import("effect"))
      const sealed = yield* sealer.seal(Redacted.value(key.privateKey), Dns.zoneKeyContext(zone))
      yield* store.setDnssec(zone, {
        state: "signing",
        key: { sealed, publicKey: key.publicKey, keyTag: key.keyTag, ds: key.ds },
        dsRecorded: []
      })
    }
    const server = yield* NameServer.make({ host: "127.0.0.1", port: 0 })
    console.log(`port ${server.port}`)
    return yield* Effect.never
  })
  const layer = Layer.mergeAll(layerMemory, configLayer(), SealerAesGcm.layerEphemeral)
  await Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(layer)))
}

const start = (kind: string) =>
  new Promise<{ port: number; stop: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=@hostplane/source", import.meta.filename, "--serve", kind], {
      stdio: ["ignore", "pipe", "inherit"]
    })
    let out = ""
    child.stdout.on("data", (chunk) => {
      out += chunk
      const match = /port (\d+)/.exec(out)
      if (match !== null) resolve({ port: Number(match[1]), stop: () => child.kill("SIGKILL") })
    })
    child.once("exit", (code) => reject(new Error(`${kind} server exited (${code})`)))
  })

const has = (tool: string) => {
  try {
    execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" })
    return true
  } catch {
    return false
  }
}

/** NSD on the same zone as our server (SOA, NS and `www` A), signed by ldns-signzone when `signed`. */
const startNsd = async (dir: string, signed: boolean) => {
  const home = Fs.mkdtempSync(Path.join(dir, signed ? "nsd-signed-" : "nsd-"))
  const zoneFile = Path.join(home, `${zone}.zone`)
  Fs.writeFileSync(
    zoneFile,
    [
      `$ORIGIN ${zone}.`,
      "$TTL 300",
      `@ 3600 IN SOA ns1.hostplane.localhost. hostmaster.${zone}. 1 3600 600 1209600 300`,
      "@ 3600 IN NS ns1.hostplane.localhost.",
      "www IN A 192.0.2.1",
      ""
    ].join("\n")
  )
  let served = zoneFile
  if (signed) {
    const key = execFileSync("ldns-keygen", ["-a", "ECDSAP256SHA256", "-k", zone], { cwd: home }).toString().trim()
    execFileSync("ldns-signzone", ["-o", zone, zoneFile, key], { cwd: home })
    served = `${zoneFile}.signed`
  }
  const port = await freePort()
  const config = Path.join(home, "nsd.conf")
  Fs.writeFileSync(
    config,
    [
      "server:",
      `  ip-address: 127.0.0.1@${port}`,
      '  username: ""',
      '  database: ""',
      `  zonesdir: "${home}"`,
      `  pidfile: "${home}/nsd.pid"`,
      `  xfrdfile: "${home}/xfrd.state"`,
      `  xfrdir: "${home}"`,
      `  zonelistfile: "${home}/zone.list"`,
      `  logfile: "${home}/nsd.log"`,
      "  server-count: 1",
      // NSD limits answers per client network by default (RRL); a benchmark from one address must not be limited.
      "  rrl-ratelimit: 0",
      "remote-control:",
      "  control-enable: no",
      "zone:",
      `  name: ${zone}`,
      `  zonefile: "${served}"`,
      ""
    ].join("\n")
  )
  const child: ChildProcess = spawn("nsd", ["-d", "-c", config], { stdio: "ignore" })
  // Ready once it answers the SOA.
  const answers = () => {
    try {
      const args = ["+short", "+time=1", "+tries=1", "-p", String(port), "@127.0.0.1", zone, "SOA"]
      return execFileSync("dig", args, { stdio: "pipe" }).toString().trim() !== ""
    } catch {
      return false
    }
  }
  for (let attempt = 0; attempt < 50 && !answers(); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { port, stop: () => child.kill("SIGKILL") }
}

const measure = (port: number, queries: string, duration: string, dnssec: boolean) => {
  const args = ["-s", "127.0.0.1", "-p", String(port), "-d", queries, "-l", duration, "-c", "4", "-q", "200"]
  if (dnssec) args.push("-D")
  const output = execFileSync("dnsperf", args).toString()
  return Number(/Queries per second:\s+([\d.]+)/.exec(output)?.[1] ?? 0)
}

if (argv[0] === "--serve") {
  await serve(argv[1] ?? "echo")
} else {
  const duration = option("--duration", "5")
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-dnsbench-"))
  const queries = Path.join(dir, "queries.txt")
  Fs.writeFileSync(queries, `www.${zone} A\n${zone} SOA\nmissing.${zone} A\n`)
  const results: Record<string, number> = {}
  const nsd = has("nsd") && has("dig")
  const ldns = has("ldns-keygen") && has("ldns-signzone")
  const kinds: Array<readonly [string, boolean]> = [
    ["echo", false],
    ["unsigned", false],
    ["signed", true]
  ]
  if (nsd) kinds.push(["nsd", false])
  if (nsd && ldns) kinds.push(["nsd-signed", true])
  for (const [kind, dnssec] of kinds) {
    const server = kind.startsWith("nsd") ? await startNsd(dir, kind === "nsd-signed") : await start(kind)
    try {
      measure(server.port, queries, "1", dnssec)
      results[kind] = measure(server.port, queries, duration, dnssec)
    } finally {
      server.stop()
    }
    console.log(`${kind.padEnd(9)} ${Math.round(results[kind]!)} queries/s`)
  }
  const echo = results.echo!
  console.log(`unsigned / echo: ${(results.unsigned! / echo).toFixed(2)}x (target >= 0.5x)`)
  console.log(`signed   / echo: ${(results.signed! / echo).toFixed(2)}x (target >= 0.4x)`)
  if (results.nsd === undefined) console.log("nsd: not installed (apt-get install nsd bind9-dnsutils), anchor skipped")
  else {
    console.log(
      `nsd      / echo: ${(results.nsd / echo).toFixed(2)}x; hostplane unsigned / nsd: ${(results.unsigned! / results.nsd).toFixed(2)}x`
    )
  }
  if (results["nsd-signed"] !== undefined) {
    console.log(
      `hostplane signed / nsd signed (pre-signed zone file): ${(results.signed! / results["nsd-signed"]).toFixed(2)}x`
    )
  }
  Fs.rmSync(dir, { recursive: true, force: true })
}
