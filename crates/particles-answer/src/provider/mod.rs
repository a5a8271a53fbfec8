//! The two wire protocols behind one call, after the egress posture allows the
//! endpoint (the reference refuses before any request is built).

mod anthropic;
mod http;
mod openai;

pub use self::anthropic::ANTHROPIC_VERSION;

use crate::{
    egress::{host_port, EgressPosture},
    prompt::Prompt,
    settings::ProviderSettings,
    Error,
};

/// Checks the endpoint against the posture.
///
/// # Errors
///
/// [`Error::EgressRefused`] when the posture does not allow it.
pub(crate) fn check_egress(
    provider: &ProviderSettings,
    egress: &EgressPosture,
) -> Result<(), Error> {
    let base_url = match provider {
        ProviderSettings::Anthropic(settings) => &settings.base_url,
        ProviderSettings::OpenAiCompatible(settings) => &settings.base_url,
    };
    let (host, port) = host_port(base_url);
    egress.check(&host, port)
}

/// One completion at `max_tokens`: the reply text, whitespace-stripped.
pub(crate) fn complete(
    provider: &ProviderSettings,
    prompt: &Prompt,
    max_tokens: u32,
    egress: &EgressPosture,
) -> Result<String, Error> {
    match provider {
        // The SDK's client follows redirects, each hop held to the posture.
        ProviderSettings::Anthropic(settings) => {
            anthropic::complete(settings, prompt, max_tokens, egress)
        }
        ProviderSettings::OpenAiCompatible(settings) => {
            openai::complete(settings, prompt, max_tokens)
        }
    }
}
