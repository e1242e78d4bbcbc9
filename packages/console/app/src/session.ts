/** The console's session, kept only in this tab's `sessionStorage` (decisions.md part 14), never in a URL. */
export interface Session {
  readonly token: string
  readonly expiresAt: string
  readonly userId: string
  readonly subject: string
}

const key = "hostplane.session"

export const readSession = (): Session | undefined => {
  try {
    const stored = JSON.parse(sessionStorage.getItem(key) ?? "null") as Session | null
    if (stored === null || typeof stored.token !== "string") return undefined
    if (new Date(stored.expiresAt).getTime() <= Date.now()) return undefined
    return stored
  } catch {
    return undefined
  }
}

export const saveSession = (session: Session): void => sessionStorage.setItem(key, JSON.stringify(session))

export const forgetSession = (): void => sessionStorage.removeItem(key)

/**
 * The OAuth callback's fragment (`#token=…&expiresAt=…&userId=…&subject=…`, or `#error=…&message=…`) signs the
 * console in; it leaves the address bar at once, so the token is never in a URL the person can copy or bookmark.
 */
export const takeFragment = (): { readonly error?: string } => {
  if (location.hash.length <= 1) return {}
  const fragment = new URLSearchParams(location.hash.slice(1))
  history.replaceState(history.state, "", location.pathname + location.search)
  const token = fragment.get("token")
  if (token !== null) {
    saveSession({
      token,
      expiresAt: fragment.get("expiresAt") ?? new Date(Date.now() + 3_600_000).toISOString(),
      userId: fragment.get("userId") ?? "",
      subject: fragment.get("subject") ?? ""
    })
    return {}
  }
  const error = fragment.get("error")
  return error === null ? {} : { error: `${fragment.get("message") ?? error} (${error})` }
}

/** The server says so in the page (decisions.md part 14); `/v1/config` does not. */
export const devLoginOn = (): boolean =>
  document.querySelector('meta[name="hostplane-dev-login"]')?.getAttribute("content") === "on"

/** The host that embeds hostplane signs its users in itself (its own cookie, decisions.md part 18): the page says so. */
export const hostLoginOn = (): boolean =>
  document.querySelector('meta[name="hostplane-host-login"]')?.getAttribute("content") === "on"

let hostSession = false

/**
 * Whether the host's own sign-in covers this tab: the API answered `/v1/me` without a token. Such a user has no
 * token here and signs out through the host.
 */
export const hostSignedIn = (): boolean => hostSession

export const setHostSignedIn = (signedIn: boolean): void => {
  hostSession = signedIn
}
