import { assert, it } from "@effect/vitest"
import { Billing } from "@hostplane/core"
import { Effect } from "effect"

const { keyOfSecretBase64, keyOfSecretText, sign, verify } = Billing.StandardWebhooks

// The test vector published with the Standard Webhooks specification.
const vector = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestamp: "1614265330",
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
}
const sent = Number(vector.timestamp)

it.effect("the signer reproduces the published Standard Webhooks test vector (base64-decoded key)", () =>
  Effect.gen(function* () {
    const key = keyOfSecretBase64(vector.secret)
    assert.strictEqual(yield* sign(key, vector.id, vector.timestamp, vector.body), vector.signature)
    assert.isUndefined(yield* verify(key, vector, sent))
  })
)

it.effect("Polar's key is the UTF-8 of the whole secret: the vector's signature does not verify with it", () =>
  Effect.gen(function* () {
    const polarKey = keyOfSecretText(vector.secret)
    assert.deepStrictEqual(Array.from(polarKey.slice(0, 6)), Array.from(new TextEncoder().encode("whsec_")))
    assert.strictEqual(yield* verify(polarKey, vector, sent), "mismatch")
    const signature = yield* sign(polarKey, vector.id, vector.timestamp, vector.body)
    assert.notStrictEqual(signature, vector.signature)
    assert.isUndefined(yield* verify(polarKey, { ...vector, signature }, sent))
  })
)

it.effect("any matching v1 entry of several verifies; other versions and bad base64 are skipped", () =>
  Effect.gen(function* () {
    const key = keyOfSecretBase64(vector.secret)
    const signature = `v2,abc v1,!!! v1,AAAA ${vector.signature}`
    assert.isUndefined(yield* verify(key, { ...vector, signature }, sent))
    assert.strictEqual(yield* verify(key, { ...vector, signature: "v2,abc v1,AAAA" }, sent), "mismatch")
  })
)

it.effect("a timestamp more than 5 minutes away either way is refused; exactly 5 minutes is accepted", () =>
  Effect.gen(function* () {
    const key = keyOfSecretBase64(vector.secret)
    assert.isUndefined(yield* verify(key, vector, sent + 300))
    assert.isUndefined(yield* verify(key, vector, sent - 300))
    assert.strictEqual(yield* verify(key, vector, sent + 301), "stale")
    assert.strictEqual(yield* verify(key, vector, sent - 301), "future")
    assert.strictEqual(yield* verify(key, { ...vector, timestamp: "soon" }, sent), "malformed")
    assert.strictEqual(yield* verify(key, { ...vector, id: "" }, sent), "malformed")
  })
)

it.effect("a changed body, id or timestamp no longer verifies", () =>
  Effect.gen(function* () {
    const key = keyOfSecretBase64(vector.secret)
    assert.strictEqual(yield* verify(key, { ...vector, body: '{"test": 2432232315}' }, sent), "mismatch")
    assert.strictEqual(yield* verify(key, { ...vector, id: "msg_other" }, sent), "mismatch")
    assert.strictEqual(yield* verify(key, { ...vector, timestamp: String(sent + 1) }, sent), "mismatch")
  })
)
