/** Server-sent events framed as Anthropic and OpenAI's Responses frame them: `event: <type>` and `data: <event>`. */
export function eventFrames(text: string): { event: string; data: any }[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const m = /^event: (\S+)\ndata: (.*)$/s.exec(f);
      if (!m) throw new Error(`not an event frame: ${f}`);
      return { event: m[1], data: JSON.parse(m[2]) };
    });
}
