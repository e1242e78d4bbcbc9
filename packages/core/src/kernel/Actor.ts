import { Context } from "effect"
import type { UserId } from "./Ids.ts"

/** The signed-in user a request acts for; provided by the transport's session check. */
export interface Actor {
  readonly userId: UserId
  readonly provider: string
  readonly subject: string
  /** The profile as read with the session, so `/v1/me` needs no second lookup. */
  readonly email: string | null
  readonly name: string | null
}

/** The actor of the current request. */
export class CurrentActor extends Context.Service<CurrentActor, Actor>()("@hostplane/core/kernel/CurrentActor") {}
