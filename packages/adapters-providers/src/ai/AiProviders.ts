import { areaProviders } from "../Area.ts"
import * as AiUpstreamOpenAi from "./AiUpstreamOpenAi.ts"

/** The AI upstream from SERVICE_AI_UPSTREAM_URL and SERVICE_AI_UPSTREAM_KEY (read by `AiConfig`); without both, 503. */
export const AiProviders = areaProviders({ name: "ai", fromEnv: AiUpstreamOpenAi.layerConfig })
