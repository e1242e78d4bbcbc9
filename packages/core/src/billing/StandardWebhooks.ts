import { Effect } from "effect"

/**
 * The Standard Webhooks scheme (spec part 5 point 6): `webhook-signature` holds space-separated `v1,<base64>` entries,
 * each an HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`. Web Crypto only (a global of every
 * supported runtime), so core needs no import; `crypto.subtle.verify` compares in constant time.
 */
export interface Delivery {
  readonly id: string
  /** Unix seconds, as sent. */
  readonly timestamp: string
  readonly signature: string
  readonly body: string
}

/** How long a delivery's timestamp may be away from the clock, either way. */
export const toleranceSeconds = 5 * 60

const encoder = new TextEncoder()

/**
 * The HMAC key Polar signs with: the UTF-8 bytes of the whole secret string, `whsec_` prefix included (what its sender
 * and SDK do; decisions.md part 7).
 */
export const keyOfSecretText = (secret: string): Uint8Array => encoder.encode(secret)

/** The HMAC key plain Standard Webhooks libraries use: the base64 after the `whsec_` prefix, decoded. */
export const keyOfSecretBase64 = (secret: string): Uint8Array =>
  Uint8Array.from(atob(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret), (c) => c.charCodeAt(0))

const importKey = (key: Uint8Array, usage: "sign" | "verify") =>
  Effect.promise(() =>
    globalThis.crypto.subtle.importKey(
      "raw",
      key as Uint8Array<ArrayBuffer>,
      { name: "HMAC", hash: "SHA-256" },
      false,
      [usage]
    )
  )

const signedContent = (id: string, timestamp: string, body: string) => encoder.encode(`${id}.${timestamp}.${body}`)

const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes))

const fromBase64 = (text: string): Uint8Array | undefined => {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

/** The `webhook-signature` value (`v1,<base64>`) for one delivery. */
export const sign = (key: Uint8Array, id: string, timestamp: string, body: string): Effect.Effect<string> =>
  Effect.flatMap(importKey(key, "sign"), (cryptoKey) =>
    Effect.promise(() => globalThis.crypto.subtle.sign("HMAC", cryptoKey, signedContent(id, timestamp, body)))
  ).pipe(Effect.map((mac) => `v1,${base64(new Uint8Array(mac))}`))

/** Why a delivery is refused; each one is a 403 to the sender. */
export type Rejection = "malformed" | "stale" | "future" | "mismatch"

/**
 * Checks a delivery against `key` at `nowSeconds`: the timestamp within the tolerance either way, then any `v1`
 * entry matching. Undefined when it verifies.
 */
export const verify = (key: Uint8Array, delivery: Delivery, nowSeconds: number): Effect.Effect<Rejection | undefined> =>
  Effect.gen(function* () {
    if (delivery.id === "" || !/^\d{1,12}$/.test(delivery.timestamp)) return "malformed"
    const sent = Number(delivery.timestamp)
    if (sent < nowSeconds - toleranceSeconds) return "stale"
    if (sent > nowSeconds + toleranceSeconds) return "future"
    const cryptoKey = yield* importKey(key, "verify")
    const content = signedContent(delivery.id, delivery.timestamp, delivery.body)
    for (const entry of delivery.signature.split(" ")) {
      const [version, value] = entry.split(",", 2)
      if (version !== "v1" || value === undefined) continue
      const mac = fromBase64(value)
      if (mac === undefined) continue
      const ok = yield* Effect.promise(() =>
        globalThis.crypto.subtle.verify("HMAC", cryptoKey, mac as Uint8Array<ArrayBuffer>, content)
      )
      if (ok) return undefined
    }
    return "mismatch"
  })
