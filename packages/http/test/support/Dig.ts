import { execSmall } from "./SmallSpawner.ts"

/** What `dig` printed: the status, the header flags and each section's records (one line each, whitespace collapsed). */
export interface DigReply {
  readonly status: string
  readonly flags: ReadonlyArray<string>
  readonly answer: ReadonlyArray<string>
  readonly authority: ReadonlyArray<string>
  readonly additional: ReadonlyArray<string>
  readonly raw: string
}

/** Parses dig's default output. */
export const parseDig = (raw: string): DigReply => {
  const status = /status: ([A-Z]+)/.exec(raw)?.[1] ?? "NONE"
  const flags = (/;; flags: ([a-z ]*);/.exec(raw)?.[1] ?? "").split(" ").filter((flag) => flag !== "")
  const sections: Record<string, Array<string>> = { ANSWER: [], AUTHORITY: [], ADDITIONAL: [] }
  let current: Array<string> | undefined
  for (const line of raw.split("\n")) {
    const heading = /^;; ([A-Z]+) SECTION:/.exec(line)
    if (heading !== null) {
      current = sections[heading[1]!]
      continue
    }
    if (line.trim() === "" || line.startsWith(";")) {
      if (line.trim() === "") current = undefined
      continue
    }
    current?.push(line.trim().replace(/\s+/g, " "))
  }
  return {
    status,
    flags,
    answer: sections.ANSWER!,
    authority: sections.AUTHORITY!,
    additional: sections.ADDITIONAL!,
    raw
  }
}

/** Runs the real `dig` against `port` on 127.0.0.1 with one try and a short timeout. */
export const dig = async (port: number, ...args: ReadonlyArray<string>): Promise<DigReply> => {
  const { code, stdout, stderr } = await execSmall("dig", [
    "@127.0.0.1",
    "-p",
    String(port),
    "+tries=1",
    "+time=2",
    ...args
  ])
  if (code !== 0) throw new Error(`dig failed (${code}): ${stdout}${stderr}`)
  return parseDig(stdout)
}

/** Runs a DNS tool (`delv`, `ldns-verify-zone`) and answers its output, whatever its exit status. */
export const tool = async (
  command: string,
  args: ReadonlyArray<string>
): Promise<{ readonly code: number; readonly output: string }> => {
  const { code, stdout, stderr } = await execSmall(command, args)
  return { code, output: `${stdout}${stderr}` }
}

/** Polls `probe` every 25 ms until `done` holds or `ms` pass; answers the last reply and the time it took. */
export const eventually = async <A>(
  probe: () => Promise<A>,
  done: (reply: A) => boolean,
  ms = 1500
): Promise<{ readonly reply: A; readonly elapsed: number }> => {
  const start = performance.now()
  for (;;) {
    const reply = await probe()
    const elapsed = performance.now() - start
    if (done(reply) || elapsed > ms) return { reply, elapsed }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
