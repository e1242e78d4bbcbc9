import { Context } from "effect"

/** The signed-in user a request acts for; provided by the transport's session check. */
export interface Actor {
  readonly userId: string
  readonly provider: string
  readonly subject: string
  /** The profile as read with the session, so `/v1/me` needs no second lookup. */
  readonly email: string | null
  readonly name: string | null
}

/** The actor of the current request. */
export class CurrentActor extends Context.Service<CurrentActor, Actor>()("@hostplane/core/kernel/CurrentActor") {}
