# ruby_cluster.rb PLAN.json - the scenario workload with ruby-redis 4.x's
# cluster mode (Redis.new(cluster: [...], replica: true): reads from
# replicas). Summary (ok, errors by class) on stdout.
require "json"
require "redis"
plan = JSON.parse(File.read(ARGV[0]))
sum = { "lib" => "ruby-redis", "version" => Redis::VERSION, "ok" => 0, "errors" => Hash.new(0) }
rc = Redis.new(cluster: plan["seeds"].map { |h, p| "redis://#{h}:#{p}" }, replica: true,
               timeout: 2)
deadline = Time.now.to_f + plan["duration"]
i = 0
while Time.now.to_f < deadline && !File.exist?(plan["stop"])
  x, y = plan["pairs"][i % plan["pairs"].size]
  f = plan["fail"][i % plan["fail"].size]
  a, b = plan["hot"][i % plan["hot"].size]
  calls = [-> { rc.mset(x, i, y, i) }, -> { rc.get(x) },
           i.odd? ? -> { rc.get(f) } : -> { rc.set(f, i) },
           -> { rc.mget(a, b) }, -> { rc.set(a, i) }]
  calls.each do |c|
    begin
      c.call
      sum["ok"] += 1
    rescue StandardError => e
      sum["errors"]["#{e.class}:#{e.message.split(' ').first.to_s[0, 40]}"] += 1
    end
  end
  i += 1
  sleep plan["interval"]
end
rc.close
sum["steps"] = i
puts JSON.generate(sum)
