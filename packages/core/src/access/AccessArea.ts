import { area } from "../Area.ts"
import { AccessPolicies } from "./AccessPolicies.ts"
import { AccessStore } from "./AccessStore.ts"

/** Spec 4.11: the access policy of a project's deployments. */
export const AccessArea = area({ name: "access", stores: [AccessStore], services: AccessPolicies.layer })
