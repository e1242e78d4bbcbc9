/** A hostname routed to a project; names are unique across all orgs. */
export interface HostnameRow {
  readonly name: string
  readonly projectId: string
  readonly orgId: string
  readonly kind: "default" | "custom"
  /** `pending_dns` until ownership is proven, then `active` (routed). */
  readonly status: "pending_dns" | "active"
  /** Random per custom hostname, published in `_service-verify.<name>`; null for the default hostname. */
  readonly verifyToken: string | null
  readonly lastError: string | null
  readonly createdAt: string
  readonly verifiedAt: string | null
}
