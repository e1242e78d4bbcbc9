import { execFile } from "node:child_process"

/** Where a database add-on answers, as `POST .../addons/database` returns it (or a token's own credentials). */
export interface Connect {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password: string
}

/** One command through the real `psql` against a project's database, over TLS as every cluster requires. */
export const psql = (at: Connect, command: string) =>
  new Promise<{ ok: boolean; out: string }>((resolve) =>
    execFile(
      "psql",
      ["-h", at.host, "-p", String(at.port), "-U", at.user, "-d", "app", "-XAtqc", command],
      { env: { ...process.env, PGPASSWORD: at.password, PGCONNECT_TIMEOUT: "10", PGSSLMODE: "require" } },
      (error, stdout, stderr) => resolve({ ok: error === null, out: error === null ? stdout.trim() : stderr })
    )
  )

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
