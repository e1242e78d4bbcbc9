import { Context, Effect } from "effect"

/**
 * One-way, salted and deliberately slow hashing of shared passwords (the project access password). The encoded form
 * names its algorithm, parameters and salt, so parameters can change while old hashes still verify.
 */
export class PasswordHasher extends Context.Service<
  PasswordHasher,
  {
    readonly hash: (password: string) => Effect.Effect<string>
    /** False for a wrong password and for an encoding this hasher cannot read; never fails. */
    readonly verify: (password: string, encoded: string) => Effect.Effect<boolean>
  }
>()("@hostplane/core/access/PasswordHasher") {}
