import { Config, Context, Duration, Effect, Layer } from "effect"
import { Settings } from "../kernel/Settings.ts"

/** Where the SSH transport listens; `null` turns it off. */
export interface SshListen {
  readonly host: string
  readonly port: number
}

/** The git settings of decisions.md parts 8 and 9. */
export interface GitConfigShape {
  /** `SERVICE_GIT_SSH_LISTEN`, default `127.0.0.1:2222`; `off` runs no SSH server. */
  readonly sshListen: SshListen | null
  /** The host and port in `sshUrl`: the public URL's host and the listen port. */
  readonly sshHost: string
  readonly sshPort: number
  /** How long a soft-deleted repo stays on disk (`SERVICE_GIT_RETENTION`, default 7 days). */
  readonly retention: Duration.Duration
}

/** `host:port`, `[v6]:port` or `off`. */
export const parseSshListen = (value: string): SshListen | null => {
  const trimmed = value.trim()
  if (trimmed === "off") return null
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/u.exec(trimmed)
  if (match === null || Number(match[2]) > 65535) throw new Error(`SERVICE_GIT_SSH_LISTEN: expected host:port or off`)
  return { host: match[1]!.replace(/^\[|\]$/gu, ""), port: Number(match[2]) }
}

/** Git settings; `sshHost` follows the shared public URL. */
export class GitConfig extends Context.Service<GitConfig, GitConfigShape>()("@hostplane/core/git/GitConfig") {
  static readonly make = (overrides: Partial<GitConfigShape> = {}) =>
    Layer.effect(
      GitConfig,
      Effect.map(Effect.service(Settings), (settings) => {
        const sshListen = overrides.sshListen === undefined ? { host: "127.0.0.1", port: 2222 } : overrides.sshListen
        return {
          sshListen,
          sshHost: new URL(settings.publicUrl).hostname,
          sshPort: sshListen?.port ?? 22,
          retention: Duration.days(7),
          ...overrides
        }
      })
    )

  /** `SERVICE_GIT_SSH_LISTEN`, `SERVICE_GIT_RETENTION`. */
  static readonly layerConfig = Layer.unwrap(
    Effect.gen(function* () {
      const env = yield* Config.all({
        sshListen: Config.option(Config.String("SERVICE_GIT_SSH_LISTEN")),
        retention: Config.option(Config.Duration("SERVICE_GIT_RETENTION"))
      })
      const overrides: { -readonly [K in keyof GitConfigShape]?: GitConfigShape[K] } = {}
      if (env.sshListen._tag === "Some") overrides.sshListen = parseSshListen(env.sshListen.value)
      if (env.retention._tag === "Some") overrides.retention = env.retention.value
      return GitConfig.make(overrides)
    })
  )
}
