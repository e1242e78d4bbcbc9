import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { show, table } from "../Output.ts"
import { resolveOrg, root, session } from "../Root.ts"

const orgSession = Effect.gen(function* () {
  const flags = yield* root
  const signedIn = yield* session(flags)
  const orgSlug = yield* resolveOrg(flags, ".", signedIn)
  return { flags, api: signedIn.api, orgSlug }
})

const zoneName = Argument.String("zone").pipe(Argument.withDescription("The zone (example.com)"))

const list = Command.make(
  "list",
  {},
  Effect.fn("dns.list")(function* () {
    const { flags, api, orgSlug } = yield* orgSession
    const zones = yield* api.dns.list({ params: { orgSlug } })
    yield* show(flags.json, zones, () =>
      table([["ZONE", "DNSSEC", "SERIAL"], ...zones.items.map((z) => [z.name, z.dnssec, String(z.serial)])])
    )
  })
).pipe(Command.withDescription("List the org's DNS zones"))

const create = Command.make(
  "create",
  { zone: zoneName },
  Effect.fn("dns.create")(function* ({ zone }) {
    const { flags, api, orgSlug } = yield* orgSession
    const created = yield* api.dns.create({ params: { orgSlug }, payload: { name: zone } })
    yield* show(flags.json, created, () => [
      `zone ${created.name}: delegate it to ${created.nameservers.join(", ")} at its registrar`
    ])
  })
).pipe(Command.withDescription("Create a DNS zone (an existing one is returned unchanged)"))

const get = Command.make(
  "show",
  { zone: zoneName },
  Effect.fn("dns.show")(function* ({ zone }) {
    const { flags, api, orgSlug } = yield* orgSession
    const detail = yield* api.dns.get({ params: { orgSlug, zone } })
    yield* show(flags.json, detail, () => [
      `${detail.name}  serial ${detail.serial}  dnssec ${detail.dnssec}`,
      ...table(detail.rrsets.map((r) => [r.name, String(r.ttl), r.type, r.records.join(" | "), r.managed_by ?? ""])),
      ...(detail.ds === undefined ? [] : detail.ds.map((ds) => `DS ${ds}`))
    ])
  })
).pipe(Command.withDescription("Show a zone with its rrsets"))

const remove = Command.make(
  "delete",
  { zone: zoneName },
  Effect.fn("dns.delete")(function* ({ zone }) {
    const { flags, api, orgSlug } = yield* orgSession
    yield* api.dns.remove({ params: { orgSlug, zone } })
    yield* show(flags.json, { deleted: zone }, () => [`deleted ${zone} and all its records`])
  })
).pipe(Command.withDescription("Delete a zone and all its records"))

const set = Command.make(
  "set",
  {
    zone: zoneName,
    name: Argument.String("name").pipe(Argument.withDescription("Relative to the zone; @ for the apex")),
    type: Argument.String("type").pipe(Argument.withDescription("A, AAAA, CNAME, MX, TXT, SRV, CAA, NS or PTR")),
    records: Argument.String("record").pipe(Argument.variadic({ min: 1 })),
    ttl: Flag.Int("ttl").pipe(Flag.withDescription("60..86400 (default 300)"), Flag.optional)
  },
  Effect.fn("dns.set")(function* ({ zone, name, type, records, ttl }) {
    const { flags, api, orgSlug } = yield* orgSession
    const rrset = yield* api.dns.putRrset({
      params: { orgSlug, zone, name, type },
      payload: { records, ...(Option.isSome(ttl) ? { ttl: ttl.value } : {}) } as never
    })
    yield* show(flags.json, rrset, () => [`${rrset.name} ${rrset.ttl} ${rrset.type} ${rrset.records.join(" | ")}`])
  })
).pipe(Command.withDescription("Replace one rrset (all records of a name and type)"))

const unset = Command.make(
  "unset",
  { zone: zoneName, name: Argument.String("name"), type: Argument.String("type") },
  Effect.fn("dns.unset")(function* ({ zone, name, type }) {
    const { flags, api, orgSlug } = yield* orgSession
    yield* api.dns.removeRrset({ params: { orgSlug, zone, name, type } })
    yield* show(flags.json, { deleted: { name, type } }, () => [`deleted ${name} ${type}`])
  })
).pipe(Command.withDescription("Delete one rrset"))

const dnssec = Command.make(
  "dnssec",
  { zone: zoneName, value: Argument.Literals("value", ["on", "off"]) },
  Effect.fn("dns.dnssec")(function* ({ zone, value }) {
    const { flags, api, orgSlug } = yield* orgSession
    const updated = yield* api.dns.dnssec({ params: { orgSlug, zone }, payload: { enabled: value === "on" } })
    yield* show(flags.json, updated, () => [
      `${updated.name}: dnssec ${updated.dnssec}`,
      ...(updated.ds ?? []).map((ds) => `give the registrar this DS: ${ds}`)
    ])
  })
).pipe(Command.withDescription("Turn DNSSEC signing on or off"))

const ds = Command.make(
  "ds",
  { zone: zoneName, records: Argument.String("ds").pipe(Argument.variadic()) },
  Effect.fn("dns.ds")(function* ({ zone, records }) {
    const { flags, api, orgSlug } = yield* orgSession
    const updated = yield* api.dns.putDs({ params: { orgSlug, zone }, payload: { ds: records } })
    yield* show(flags.json, updated, () => [`${updated.name}: dnssec ${updated.dnssec}`])
  })
).pipe(Command.withDescription("Record the DS the parent zone now publishes"))

export const dns = Command.make("dns").pipe(
  Command.withDescription("DNS zones of an org (spec 4.14)"),
  Command.withSubcommands([list, create, get, remove, set, unset, dnssec, ds])
)
