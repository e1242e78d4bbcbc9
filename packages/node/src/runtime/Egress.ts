/**
 * The one network service a tenant's `fetch` may leave through, in workerd's config: public addresses only, never
 * loopback, private, link-local or a unix socket (decisions.md part 13). The loader shards and the hot shard both
 * name it, so the rule is written here once.
 */
export const internetService = `(name = "internet", network = (allow = ["public"], deny = ["local", "private", "unix", "unix-abstract"]))`
