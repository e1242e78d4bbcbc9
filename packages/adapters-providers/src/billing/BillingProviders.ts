import { areaProviders } from "../Area.ts"
import * as PaymentGatewayPolar from "../payment/PaymentGatewayPolar.ts"

/** Polar from SERVICE_POLAR_* when a token is set; without one billing answers 501 billing_off. */
export const BillingProviders = areaProviders({ name: "billing", fromEnv: PaymentGatewayPolar.layerConfig })
