import { Schema } from "effect"
import { VerificationRecord, verificationRecord } from "./HostnameName.ts"
import { HostnameTls } from "../tls/Certificate.ts"
import type { OrgId, ProjectId } from "../kernel/Ids.ts"

/** A hostname routed to a project; names are unique across all orgs. */
export interface HostnameRow {
  readonly name: string
  readonly projectId: ProjectId
  readonly orgId: OrgId
  readonly kind: "default" | "custom"
  /** `pending_dns` until ownership is proven, then `active` (routed). */
  readonly status: "pending_dns" | "active"
  /** Random per custom hostname, published in `_service-verify.<name>`; null for the default hostname. */
  readonly verifyToken: string | null
  readonly lastError: string | null
  readonly createdAt: string
  readonly verifiedAt: string | null
}

export const HostnameKind = Schema.Literals(["default", "custom"])

/** `active` is the verified state (decisions.md part 4): only active names are routed. */
export const HostnameStatus = Schema.Literals(["pending_dns", "active"])

/** A hostname as clients see it (decisions.md part 4). */
export const Hostname = Schema.Struct({
  name: Schema.String,
  kind: HostnameKind,
  status: HostnameStatus,
  /** The TXT record proving ownership; null for the default hostname. */
  verify: Schema.NullOr(VerificationRecord),
  /** The fallback origin a CNAME of the name may point at instead. */
  cname: Schema.String,
  /** What the last failed check observed; null once verified. */
  lastError: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  verifiedAt: Schema.NullOr(Schema.String),
  /** The certificate the edge serves the name with over HTTPS (decisions.md part 16). */
  tls: HostnameTls
})
export type Hostname = typeof Hostname.Type

export const HostnameList = Schema.Struct({ items: Schema.Array(Hostname) })

export const AddHostnameInput = Schema.Struct({ name: Schema.String })

export const toHostname = (row: HostnameRow, fallbackOrigin: string, tls: HostnameTls): Hostname => ({
  name: row.name,
  kind: row.kind,
  status: row.status,
  verify: row.kind === "custom" && row.verifyToken !== null ? verificationRecord(row.name, row.verifyToken) : null,
  cname: fallbackOrigin,
  lastError: row.lastError,
  createdAt: row.createdAt,
  verifiedAt: row.verifiedAt,
  tls
})

/** Where the edge sends a request for an active hostname. */
export interface HostnameRoute {
  readonly projectId: ProjectId
  readonly orgId: OrgId
}
