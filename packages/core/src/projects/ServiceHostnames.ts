import { Effect } from "effect"
import { HostnamesConfig } from "../hostnames/HostnamesConfig.ts"
import { IdentityConfig } from "../identity/IdentityConfig.ts"
import { canonicalHost } from "../kernel/HostName.ts"
import { Settings } from "../kernel/Settings.ts"
import { MailConfig } from "../mail/MailConfig.ts"

const hostOf = (url: string): ReadonlyArray<string> => (URL.canParse(url) ? [new URL(url).hostname] : [])

/**
 * The hostnames the service itself answers on or hands out (fallback origin, name servers, its own domains, mail
 * domain, the hosts of its public URL and OAuth redirects): a project's default hostname may never be one of them.
 */
export const serviceHostnames = Effect.gen(function* () {
  const settings = yield* Settings
  const hostnames = yield* HostnamesConfig
  const mail = yield* MailConfig
  const identity = yield* IdentityConfig
  return new Set(
    [
      hostnames.fallbackOrigin,
      ...hostnames.dnsNameservers,
      ...settings.serviceDomains,
      mail.mailDomain,
      ...hostOf(settings.publicUrl),
      ...identity.oauthRedirects.flatMap(hostOf)
    ]
      .map(canonicalHost)
      .filter((name) => name !== "")
  ) as ReadonlySet<string>
})
