import { aiBinding } from "./bindings/Ai.ts"
import { authBinding } from "./bindings/Auth.ts"
import { dbBinding } from "./bindings/Db.ts"
import { emailBinding } from "./bindings/Mail.ts"
import { storageBinding } from "./bindings/Storage.ts"

/**
 * The add-ons' bindings a node serves to workers, one line each: the node's bindings (`bindings/Bindings.ts`), the
 * entry module's `env` and the runtime's worker-side modules fold this list.
 */
export const bindings = [dbBinding, storageBinding, emailBinding, aiBinding, authBinding] as const
