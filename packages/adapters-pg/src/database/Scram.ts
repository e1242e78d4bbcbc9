import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto"

const iterations = 4096

/**
 * PostgreSQL's stored form of a SCRAM-SHA-256 password (`SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`),
 * computed here so the plaintext is never sent to the server. Passwords are ASCII, so SASLprep leaves them unchanged.
 */
export const scramVerifier = (password: string, salt: Uint8Array = randomBytes(16)): string => {
  const salted = pbkdf2Sync(password, salt, iterations, 32, "sha256")
  const clientKey = createHmac("sha256", salted).update("Client Key").digest()
  const storedKey = createHash("sha256").update(clientKey).digest()
  const serverKey = createHmac("sha256", salted).update("Server Key").digest()
  return `SCRAM-SHA-256$${iterations}:${Buffer.from(salt).toString("base64")}$${storedKey.toString("base64")}:${serverKey.toString("base64")}`
}

/** The shape `scramVerifier` produces: safe to place in a quoted SQL literal. */
export const isScramVerifier = (text: string): boolean =>
  /^SCRAM-SHA-256\$\d+:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/.test(text)
