import type { Database, Storage } from "@hostplane/core"

/** The means a `hostplane dev` server has for its one local project's add-ons; any of them may be missing. */
export interface DevLocal {
  /** An object store for the folder's objects (the CLI: a disk store in `.hostplane/dev/storage`). */
  readonly objects?: Storage.ObjectStore["Service"] | undefined
  /** The storage quota to enforce; the free plan's by default. */
  readonly storageQuotaBytes?: number | undefined
  /** A folder sent mail is written to as `<id>.eml`. */
  readonly outbox?: string | undefined
  /** The project's address: the only `From` a message may carry. */
  readonly mailFrom?: string | undefined
  /** The linked project's database (`hostplane dev --linked`). */
  readonly database?: Database.DatabaseConnect | undefined
  /** One line of the dev server's own output. */
  readonly print: (line: string) => void
}
