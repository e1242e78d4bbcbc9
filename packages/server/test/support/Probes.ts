import { execSmall } from "../../../http/test/support/SmallSpawner.ts"

/** Where a database add-on answers, as `POST .../addons/database` returns it (or a token's own credentials). */
export interface Connect {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
}

/** One command through the real `psql` against a project's database, over TLS as every cluster requires. */
export const psql = async (at: Connect, command: string) => {
  const { code, stdout, stderr } = await execSmall(
    "psql",
    ["-h", at.host, "-p", String(at.port), "-U", at.user, "-d", "app", "-XAtqc", command],
    { env: { ...process.env, PGPASSWORD: at.password, PGCONNECT_TIMEOUT: "10", PGSSLMODE: "require" } }
  )
  return { ok: code === 0, out: code === 0 ? stdout.trim() : stderr }
}

/** `hostplane_jobs_total` of one server's /metrics, summed over outcomes, by kind. */
export const jobClaims = async (metricsPort: number) => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  const claims = new Map<string, number>()
  for (const line of text.split("\n")) {
    if (!line.startsWith("hostplane_jobs_total{")) continue
    const kind = /kind="([^"]+)"/.exec(line)?.[1]
    const value = Number(line.slice(line.lastIndexOf(" ") + 1))
    if (kind !== undefined) claims.set(kind, (claims.get(kind) ?? 0) + value)
  }
  return claims
}
