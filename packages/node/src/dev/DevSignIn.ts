import { createHash } from "node:crypto"
import type { WorkerUser } from "../bindings/Auth.ts"

/** The cookie of a dev sign-in through `/__service/auth/login/<provider>`: the user it names, readable by no worker. */
export const devAuthCookie = "hostplane_dev_auth"

/** The dev user a sign-in names, by email and provider. */
export const devUserOf = (email: string, provider: string): WorkerUser => ({
  id: `dev_${createHash("sha256").update(email.toLowerCase()).digest("hex").slice(0, 16)}`,
  email,
  name: email.slice(0, email.indexOf("@")),
  provider
})

/** The user of a dev sign-in cookie's value, or undefined for one this dev server never set. */
export const devUserOfCookie = (value: string | undefined): WorkerUser | undefined => {
  if (value === undefined || value === "") return undefined
  try {
    const { email, provider } = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Record<string, unknown>
    if (typeof email !== "string" || typeof provider !== "string" || !email.includes("@")) return undefined
    return devUserOf(email, provider)
  } catch {
    return undefined
  }
}

export const devCookieValue = (email: string, provider: string) =>
  Buffer.from(JSON.stringify({ email, provider }), "utf8").toString("base64url")
