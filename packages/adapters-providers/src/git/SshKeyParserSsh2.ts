import { Git } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { createHash, createPublicKey } from "node:crypto"
import ssh2 from "ssh2"

const typeOf: Record<string, Git.SshKeyType> = {
  "ssh-ed25519": "ed25519",
  "ecdsa-sha2-nistp256": "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384": "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521": "ecdsa-sha2-nistp521",
  "ssh-rsa": "rsa"
}

const refused = (message: string) => new Git.SshKeyRefused({ message })

/** `SHA256:` and the unpadded base64 SHA-256 of the key blob, exactly as `ssh-keygen -lf` prints it. */
export const fingerprintOf = (blob: Uint8Array): string =>
  `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/u, "")}`

/** Parses one OpenSSH public key line with the `ssh2` package's key parser (decisions.md part 11's rules). */
export const parse = (line: string): Effect.Effect<Git.ParsedSshKey, Git.SshKeyRefused> =>
  Effect.suspend(() => {
    const trimmed = line.trim()
    if (trimmed === "" || /[\r\n]/u.test(trimmed)) return Effect.fail(refused("one public key line is expected"))
    const [first] = trimmed.split(/\s+/u)
    if (first !== undefined && !/^(ssh-|ecdsa-)/u.test(first)) {
      return Effect.fail(refused("a key line with options (or of an unknown type) is not accepted"))
    }
    const parsed = ssh2.utils.parseKey(trimmed)
    if (parsed instanceof Error || Array.isArray(parsed)) {
      return Effect.fail(
        refused(`not a valid public key: ${parsed instanceof Error ? parsed.message : "several keys"}`)
      )
    }
    if (parsed.isPrivateKey()) return Effect.fail(refused("this is a private key: send the public one"))
    const type = typeOf[parsed.type]
    if (parsed.type === "ssh-dss") return Effect.fail(refused("DSA keys are not accepted"))
    if (type === undefined) return Effect.fail(refused(`key type ${parsed.type} is not accepted`))
    if (type === "rsa") {
      const bits = createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0
      if (bits < 2048) return Effect.fail(refused(`RSA keys need 2048 bits or more (this one has ${bits})`))
    }
    const blob = parsed.getPublicSSH()
    const comment = parsed.comment.trim()
    return Effect.succeed({
      type,
      fingerprint: fingerprintOf(blob),
      comment,
      line: `${parsed.type} ${Buffer.from(blob).toString("base64")}${comment === "" ? "" : ` ${comment}`}`
    })
  })

export const layer = Layer.succeed(Git.SshKeyParser, Git.SshKeyParser.of({ parse }))
