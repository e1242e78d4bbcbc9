import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { Access } from "@hostplane/core"
import { Effect, Layer, Option } from "effect"

/** scrypt cost: N = 2^logN, block size r, parallelism p. */
export interface Params {
  readonly logN: number
  readonly r: number
  readonly p: number
}

/** N = 2^15, r = 8, p = 1: 32 MiB and tens of milliseconds per hash. */
export const defaultParams: Params = { logN: 15, r: 8, p: 1 }

const saltBytes = 16
const keyBytes = 32

/** Bounds for parameters read back from a stored hash, so a corrupt row cannot ask for gigabytes or hours. */
const maxMemory = 256 * 1024 * 1024
const withinBounds = ({ logN, r, p }: Params) =>
  logN >= 10 && logN <= 20 && r >= 1 && r <= 32 && p >= 1 && p <= 4 && 128 * 2 ** logN * r <= maxMemory

/**
 * PHC string format: `$scrypt$ln=15,r=8,p=1$<salt>$<key>`, salt and key in unpadded standard base64. The key is
 * always 32 bytes: scrypt's output for a shorter length is a prefix of it, so a cut key must not verify.
 */
const encodedPattern =
  /^\$scrypt\$ln=([1-9][0-9]?),r=([1-9][0-9]{0,2}),p=([1-9][0-9]{0,2})\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/

const toB64 = (bytes: Buffer) => bytes.toString("base64").replace(/=+$/, "")

/** Decodes unpadded base64 only in its canonical form, so one stored hash has exactly one spelling. */
const fromB64 = (text: string): Option.Option<Buffer> => {
  const bytes = Buffer.from(text, "base64")
  return toB64(bytes) === text ? Option.some(bytes) : Option.none()
}

interface Decoded {
  readonly params: Params
  readonly salt: Buffer
  readonly key: Buffer
}

const decode = (encoded: string): Option.Option<Decoded> => {
  const match = encodedPattern.exec(encoded)
  if (match === null) return Option.none()
  const params: Params = { logN: Number(match[1]), r: Number(match[2]), p: Number(match[3]) }
  if (!withinBounds(params)) return Option.none()
  return Option.flatMap(fromB64(match[4]!), (salt) =>
    Option.flatMap(fromB64(match[5]!), (key) =>
      salt.length >= saltBytes && salt.length <= 64 && key.length === keyBytes
        ? Option.some({ params, salt, key })
        : Option.none()
    )
  )
}

/** Runs scrypt on the libuv thread pool; the password is NFC-normalized so the same typed text always matches. */
const derive = (password: string, salt: Buffer, params: Params) =>
  Effect.callback<Buffer>((resume) => {
    const N = 2 ** params.logN
    scrypt(
      password.normalize("NFC"),
      salt,
      keyBytes,
      { N, r: params.r, p: params.p, maxmem: 2 * 128 * N * params.r + 1024 * 1024 },
      (error, key) => resume(error === null ? Effect.succeed(key) : Effect.die(error))
    )
  })

/** scrypt password hashing with a 16-byte random salt and a 32-byte key, compared in constant time. */
export const make = (params: Params = defaultParams): Access.PasswordHasher["Service"] => {
  if (!withinBounds(params)) throw new RangeError("scrypt parameters out of bounds")
  const prefix = `$scrypt$ln=${params.logN},r=${params.r},p=${params.p}$`

  const hash = Effect.fn("PasswordHasher.hash")(function* (password: string) {
    const salt = randomBytes(saltBytes)
    const key = yield* derive(password, salt, params)
    return `${prefix}${toB64(salt)}$${toB64(key)}`
  })

  const verify = Effect.fn("PasswordHasher.verify")(function* (password: string, encoded: string) {
    const decoded = decode(encoded)
    if (Option.isNone(decoded)) return false
    const { key, salt, params: stored } = decoded.value
    const candidate = yield* derive(password, salt, stored)
    return timingSafeEqual(candidate, key)
  })

  return Access.PasswordHasher.of({ hash, verify })
}

/** The hasher with the default cost. */
export const layer: Layer.Layer<Access.PasswordHasher> = Layer.sync(Access.PasswordHasher, () => make())

/** The hasher with another cost, e.g. a cheaper one in tests; stored hashes keep verifying under any cost. */
export const layerWith = (params: Params): Layer.Layer<Access.PasswordHasher> =>
  Layer.sync(Access.PasswordHasher, () => make(params))
