import { Effect } from "effect"
import { RegistrarAccount, RegistrarMemory, registrarSuite } from "@hostplane/testkit"

registrarSuite(
  "RegistrarMemory",
  Effect.sync(() => {
    const account = new RegistrarAccount()
    return { account, registrar: RegistrarMemory.make(account) }
  })
)
