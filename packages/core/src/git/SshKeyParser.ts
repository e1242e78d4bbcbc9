import { Context, Effect, Layer, Schema } from "effect"
import { portOff } from "../kernel/Port.ts"
import type { SshKeyType } from "./Credentials.ts"

/** A public key as a real SSH key parser read it. */
export interface ParsedSshKey {
  readonly type: SshKeyType
  /** `SHA256:` and the unpadded base64 of the SHA-256 of the key blob: what `ssh-keygen -lf` prints. */
  readonly fingerprint: string
  readonly comment: string
  /** The key line as stored: type, base64 blob and comment, normalised. */
  readonly line: string
}

/** Why a key line is refused (400): unparsable, options before the key, DSA, RSA under 2048 bits. */
export class SshKeyRefused extends Schema.TaggedError<SshKeyRefused>()("SshKeyRefused", {
  message: Schema.String
}) {}

/** Parses OpenSSH public key lines; the reference adapter uses the `ssh2` package's parser. */
export class SshKeyParser extends Context.Service<
  SshKeyParser,
  {
    readonly parse: (line: string) => Effect.Effect<ParsedSshKey, SshKeyRefused>
  }
>()("@hostplane/core/git/SshKeyParser") {
  /** No parser: adding an SSH key answers 503 `git_unavailable`. */
  static readonly off: Layer.Layer<SshKeyParser> = Layer.sync(SshKeyParser, () =>
    portOff({ parse: () => Effect.die(new Error("the SSH key parser is off")) })
  )
}
