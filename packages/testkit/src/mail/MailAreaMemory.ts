import { areaMemory } from "../Area.ts"
import { mailOutboxSuite } from "./MailOutboxSuite.ts"
import * as MailOutboxMemory from "./MailOutboxMemory.ts"

export const MailAreaMemory = areaMemory({ name: "mail", stores: MailOutboxMemory.layer, suites: [mailOutboxSuite] })
