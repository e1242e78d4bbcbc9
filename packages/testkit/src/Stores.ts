export type { Stores } from "@hostplane/core"
